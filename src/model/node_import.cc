#include "model/node_import.h"
