-- Whether this node would run a vote's write, without writing (Client::status, `redlock status`).
-- KEYS[1] is a key nobody writes: the key prefix's own auxiliary key 'probe' (lib/core/keys.hpp;
-- no lock has an empty resource name). A SET ... XX of a key that does not exist changes
-- nothing, and is refused as every write of the lock scripts would be: OOM (maxmemory reached
-- with noeviction), READONLY, NOREPLICAS (min-replicas-to-write), NOPERM (the ACL). Returns 1
-- when the write was allowed, 0 when the key exists (another program's: it is left alone, and
-- nothing is known). EXISTS is asked with pcall: an ACL that denies it (the scripts can do
-- without it) leaves the SET XX to a key that still never exists.
if redis.pcall('EXISTS', KEYS[1]) == 1 then return 0 end
redis.call('SET', KEYS[1], '', 'XX')
return 1
