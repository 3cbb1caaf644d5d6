-- Extends many locks in one call (one lock for extend(), a batch for the watchdog).
-- KEYS: every lock's keys, lock after lock. ARGV: per lock, three values: token, ttl in ms,
-- number of keys. Returns one integer per lock:
--    1  every key held the token; each key's ttl is now at least the new ttl. A ttl is only
--       ever raised, never shortened: the deadline a holder already relies on stays covered.
--    0  some key does not hold the token (then no key of that lock was touched);
--   -1  some key holds a value of another type (likewise untouched).
-- One lock's bad key never fails the others in the same batch.
-- A token of this version marked where somebody waits (acquire.lua, lib/core/token.hpp).
local function marked(value, token)
  return value and string.byte(token, -1) == 46 and value == string.sub(token, 1, -2) .. '!'
end

local result, k = {}, 1
for i = 1, #ARGV, 3 do
  local token, ttl, n = ARGV[i], tonumber(ARGV[i + 1]), tonumber(ARGV[i + 2])
  local state = 1
  for j = k, k + n - 1 do
    local value = redis.pcall('GET', KEYS[j])
    if type(value) == 'table' and value.err then
      state = -1
      break
    elseif value ~= token and not marked(value, token) then
      state = 0
      break
    end
  end
  if state == 1 then
    for j = k, k + n - 1 do
      if redis.call('PTTL', KEYS[j]) < ttl then
        redis.call('PEXPIRE', KEYS[j], ttl)
      end
    end
  end
  result[#result + 1] = state
  k = k + n
end
return result
