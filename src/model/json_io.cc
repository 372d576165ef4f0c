#include "model/json_io.h"
