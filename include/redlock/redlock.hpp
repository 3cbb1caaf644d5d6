// redlock-cpp: the Redlock distributed lock over N independent Redis masters.
#pragma once

#include "redlock/client.hpp"
#include "redlock/config.hpp"
#include "redlock/errors.hpp"
#include "redlock/lock.hpp"
