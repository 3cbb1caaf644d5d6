-- KEYS: resource keys; ARGV[1]: token; ARGV[2]: '1' to announce the release on each key's
-- channel <key>:released (a real release), '0' not to (the clean-up of a failed attempt, which
-- must never wake a waiter). Deletes only keys that hold the token; returns how many.
-- The notice carries the releaser's name (as acquire.lua names a holder: a digest of the token,
-- never the token), so that a client counts one release once, not once per node.
local released = 0
for _, key in ipairs(KEYS) do
  if redis.call('GET', key) == ARGV[1] then
    redis.call('DEL', key)
    if ARGV[2] == '1' then
      redis.call('PUBLISH', key .. ':released', string.sub(redis.sha1hex(ARGV[1]), 1, 16))
    end
    released = released + 1
  end
end
return released
