#include "model/k8s.h"

#include <gtest/gtest.h>
