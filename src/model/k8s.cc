#include "model/k8s.h"
