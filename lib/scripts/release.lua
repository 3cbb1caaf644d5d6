-- KEYS: resource keys; ARGV[1]: token. Deletes only keys that hold the token and announces
-- each on the channel <key>:released. Returns how many keys were deleted.
local released = 0
for _, key in ipairs(KEYS) do
  if redis.call('GET', key) == ARGV[1] then
    redis.call('DEL', key)
    redis.call('PUBLISH', key .. ':released', ARGV[1])
    released = released + 1
  end
end
return released
