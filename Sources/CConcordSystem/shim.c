#include "CConcordSystem.h"
