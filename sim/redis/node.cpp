#include "node.hpp"
