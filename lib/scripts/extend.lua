-- KEYS: resource keys; ARGV[1]: token; ARGV[2]: ttl in ms. All keys or none.
-- Returns 1 when every key held the token and got the new ttl, else 0.
for _, key in ipairs(KEYS) do
  if redis.call('GET', key) ~= ARGV[1] then
    return 0
  end
end
for _, key in ipairs(KEYS) do
  redis.call('PEXPIRE', key, ARGV[2])
end
return 1
