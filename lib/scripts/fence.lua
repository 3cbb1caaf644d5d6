-- The write-back of a fencing token. KEYS: resource keys; ARGV[1]: token; ARGV[2]: the fencing
-- token (a decimal integer). Only while this node still holds the token on every key, raises
-- each key's fence counter (<key>\0fence, lib/core/keys.hpp) to at least the fencing token. Returns 1 when it did, 0
-- when the lock is not ours here (nothing touched).
-- Why: a later grant's quorum meets the quorum that ran this in some node; there, the later
-- grant's SET could only succeed after our key was gone, so after this ran, and its INCR returns
-- more than our fencing token. Counters compare as Lua numbers: exact up to 2^53.
-- The token, or the token marked where somebody waits (acquire.lua, lib/core/token.hpp).
local marked = string.byte(ARGV[1], -1) == 46 and string.sub(ARGV[1], 1, -2) .. '!'
for _, key in ipairs(KEYS) do
  local value = redis.call('GET', key)
  if not value or (value ~= ARGV[1] and value ~= marked) then
    return 0
  end
end
local fence = tonumber(ARGV[2])
for _, key in ipairs(KEYS) do
  local c = key .. '\0fence'
  local counter = tonumber(redis.call('GET', c) or '0')
  if counter < fence then
    redis.call('SET', c, ARGV[2])
  end
end
return 1
