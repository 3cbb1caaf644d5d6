// redlock-cpp: the Redlock distributed lock over N independent Redis masters.
#pragma once

#include "redlock/client.hpp"
#include "redlock/config.hpp"
#include "redlock/errors.hpp"
#include "redlock/held_lock.hpp"
#include "redlock/lock.hpp"
#include "redlock/mutex.hpp"
