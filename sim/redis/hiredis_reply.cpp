#include "hiredis_reply.hpp"
