#include "model/json_io.h"

#include <gtest/gtest.h>
