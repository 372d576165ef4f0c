#include "model/duration.h"

#include <gtest/gtest.h>
