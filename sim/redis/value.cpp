#include "value.hpp"
