-- Extends many locks in one call (one lock for extend(), a batch for the watchdog).
-- KEYS: every lock's keys, lock after lock. ARGV: per lock, three values: token, ttl in ms,
-- number of keys. Returns one integer per lock: 1 when all its keys held the token and got the
-- new ttl, 0 when not (then none was touched).
local result, k = {}, 1
for i = 1, #ARGV, 3 do
  local token, ttl, n = ARGV[i], ARGV[i + 1], tonumber(ARGV[i + 2])
  local ours = true
  for j = k, k + n - 1 do
    if redis.call('GET', KEYS[j]) ~= token then
      ours = false
      break
    end
  end
  if ours then
    for j = k, k + n - 1 do
      redis.call('PEXPIRE', KEYS[j], ttl)
    end
  end
  result[#result + 1] = ours and 1 or 0
  k = k + n
end
return result
