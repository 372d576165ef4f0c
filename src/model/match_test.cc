#include "model/match.h"

#include <gtest/gtest.h>
