-- KEYS: resource keys; ARGV[1]: token; ARGV[2]: ttl in ms; ARGV[3]: '1' to count a fenced
-- grant. All keys or none.
-- Returns {1, fence} when granted: with fencing, the highest of the keys' fence counters after
-- incrementing each (<key>:fence, no ttl); without, 0.
-- Returns {0, pttl, holder} when a token holds one of the keys: its remaining ttl and a name for
-- that holder (a digest of its token, never the token itself). Our own token counts too: every
-- attempt has a fresh token, so finding it here means this server was already asked in this
-- attempt under another address (one server listed twice), and it must not vote twice.
for _, key in ipairs(KEYS) do
  local holder = redis.call('GET', key)
  if holder then
    return {0, redis.call('PTTL', key), string.sub(redis.sha1hex(holder), 1, 16)}
  end
end
local fence = 0
for _, key in ipairs(KEYS) do
  redis.call('SET', key, ARGV[1], 'PX', ARGV[2])
  if ARGV[3] == '1' then
    local counter = redis.call('INCR', key .. ':fence')
    if counter > fence then
      fence = counter
    end
  end
end
return {1, fence}
