#include "model/node_import.h"

#include <gtest/gtest.h>
