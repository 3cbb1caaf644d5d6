-- KEYS: resource keys; ARGV[1]: token; ARGV[2]: ttl in ms. All keys or none.
-- Returns {1} when granted, {0, pttl, holder} when another token holds one of the keys: its
-- remaining ttl and a name for that holder (a digest of its token, never the token itself).
for _, key in ipairs(KEYS) do
  local holder = redis.call('GET', key)
  if holder and holder ~= ARGV[1] then
    return {0, redis.call('PTTL', key), string.sub(redis.sha1hex(holder), 1, 16)}
  end
end
for _, key in ipairs(KEYS) do
  redis.call('SET', key, ARGV[1], 'PX', ARGV[2])
end
return {1}
