-- Extends many locks in one call (one lock for extend(), a batch for the watchdog).
-- KEYS: every lock's keys, lock after lock. ARGV: per lock, three values: token, ttl in ms,
-- number of keys, negative for a permit of a semaphore (its one slot key: acquire.lua), whose
-- semaphore's permits key is then kept at least as long as the slot, or 'r' for a reader of a
-- read-write lock (one key, the lock key L: acquire.lua, ARGV[8] 'shared'): its token must be a
-- member of aux(L, 'readers') whose score (its lease's end on this node's clock) has not passed,
-- and L must hold the readers' marker; its score and the ttls of L and of the set are then raised
-- (never lowered) to cover now + ttl. Returns one integer per lock:
--    1  every key held the token; each key's ttl is now at least the new ttl. A ttl is only
--       ever raised, never shortened: the deadline a holder already relies on stays covered.
--    0  some key does not hold the token (then no key of that lock was touched);
--   -1  some key holds a value of another type (likewise untouched).
-- One lock's bad key never fails the others in the same batch.
-- A token of this version marked where somebody waits (acquire.lua, lib/core/token.hpp).
local function marked(value, token)
  return value and string.byte(token, -1) == 46 and value == string.sub(token, 1, -2) .. '!'
end

-- The number of permits a semaphore keeps, under the lock key its slot key begins with (the part
-- before the first NUL), in that key's Redis Cluster hash slot (acquire.lua, aux).
local function permits_of(key)
  local nul = string.find(key, '\0', 1, true)
  if nul then key = string.sub(key, 1, nul - 1) end
  if string.find(key, '[{}]') then return key .. '\0permits' end
  return key .. '\0{' .. key .. '}permits'
end

-- A reader's renewal (see above): 1, 0 or -1 as for a lock. The ZADD is the only command that
-- may be refused for memory: then it is not renewed here (0), and the batch goes on.
-- Writes follow its TIME: effects replication on a server before Redis 5 (a no-op on Redis 7),
-- asked before any write of the batch.
local now
for i = 3, #ARGV, 3 do
  if ARGV[i] == 'r' then
    if redis.replicate_commands then pcall(redis.replicate_commands) end
    break
  end
end
local function renew_reader(L, token, ttl)
  local readers = L .. '\0{' .. L .. '}readers'  -- aux(L, 'readers') (acquire.lua)
  if string.find(L, '[{}]') then readers = L .. '\0readers' end
  if not now then
    local time = redis.call('TIME')
    now = tonumber(time[1]) * 1000 + math.floor(tonumber(time[2]) / 1000)
  end
  local score = redis.pcall('ZSCORE', readers, token)
  local value = redis.pcall('GET', L)
  if (type(score) == 'table' and score.err) or (type(value) == 'table' and value.err) then
    return -1
  end
  if not score or tonumber(score) <= now or value ~= 'readers\0' then return 0 end
  if tonumber(score) < now + ttl then
    local added = redis.pcall('ZADD', readers, now + ttl, token)
    if type(added) == 'table' and added.err then return 0 end
  end
  for _, key in ipairs({L, readers}) do
    if redis.call('PTTL', key) < ttl then redis.call('PEXPIRE', key, ttl) end
  end
  return 1
end

local result, k = {}, 1
for i = 1, #ARGV, 3 do
  local token, ttl = ARGV[i], tonumber(ARGV[i + 1])
  local reader = ARGV[i + 2] == 'r'
  local n = reader and 1 or tonumber(ARGV[i + 2])
  local permit = n < 0
  if permit then n = -n end
  local state = 1
  if reader then state = renew_reader(KEYS[k], token, ttl) end
  for j = k, k + (reader and 0 or n) - 1 do
    local value = redis.pcall('GET', KEYS[j])
    if type(value) == 'table' and value.err then
      state = -1
      break
    elseif value ~= token and not marked(value, token) then
      state = 0
      break
    end
  end
  if state == 1 and not reader then
    for j = k, k + n - 1 do
      if redis.call('PTTL', KEYS[j]) < ttl then
        redis.call('PEXPIRE', KEYS[j], ttl)
      end
    end
    -- A pcall: the permits key is the semaphore's, not the holder's; an error there (another
    -- type) must not stop the renewal of what the holder does hold.
    local permits = permit and permits_of(KEYS[k])
    local left = permits and redis.pcall('PTTL', permits)
    if type(left) == 'number' and left ~= -2 and left < ttl then
      redis.pcall('PEXPIRE', permits, ttl)
    end
  end
  result[#result + 1] = state
  k = k + n
end
return result
