/// \file
/// \brief redlock-cpp: the Redlock distributed lock over N independent Redis masters. Includes
/// the whole public API.
#pragma once

#include "redlock/client.hpp"
#include "redlock/config.hpp"
#include "redlock/election.hpp"
#include "redlock/errors.hpp"
#include "redlock/held_lock.hpp"
#include "redlock/lock.hpp"
#include "redlock/mutex.hpp"
#include "redlock/observer.hpp"
#include "redlock/shared_mutex.hpp"
#include "redlock/version.hpp"

/// \namespace redlock
/// \brief The whole public API of redlock-cpp: Client, Config, Lock and its results,
/// HeldLock, Mutex, and the error codes Errc.
