#include "model/match.h"
