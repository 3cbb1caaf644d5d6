-- KEYS: resource keys; ARGV[1]: token; ARGV[2]: '1' to announce the release on each key's
-- channel <key>:released (a real release), '0' not to (the clean-up of a failed attempt, which
-- must never wake a waiter). Deletes only keys that hold the token; returns how many.
local released = 0
for _, key in ipairs(KEYS) do
  if redis.call('GET', key) == ARGV[1] then
    redis.call('DEL', key)
    if ARGV[2] == '1' then
      redis.call('PUBLISH', key .. ':released', ARGV[1])
    end
    released = released + 1
  end
end
return released
