#include "model/duration.h"
