#include "model/quantity.h"

#include <gtest/gtest.h>
