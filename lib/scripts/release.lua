-- KEYS: resource keys; ARGV[1]: token; ARGV[2]: '1' to announce the release (a real release),
-- '0' not to (the clean-up of a failed attempt, which must never wake a waiter). Deletes only
-- keys that hold the token; returns how many.
-- A notice carries the releaser's name (as acquire.lua names a holder: a digest of the token,
-- never the token), so that a client counts one release once, not once per node. When waiters
-- stand in the key's queue (acquire.lua), it is the first one's turn for ARGV[3] ms: only its
-- client is told, on its channel ("<name>|<ticket>|<key>"), and so are the clients of waiters
-- for several keys ("<name>||<key>"). Otherwise the notice goes to the key's channel
-- <key>:released, which every waiting client hears.
-- With ARGV[4], a waiter's ticket, and one key: ARGV[5] a place puts it (back) in line (a failed
-- attempt's clean-up: where it was granted, it left the line), the queue kept ARGV[6] ms; ''
-- takes it out (it stopped waiting: if it was first and the key is free, the next one's turn
-- begins).
local released = 0
local name = string.sub(redis.sha1hex(ARGV[1]), 1, 16)

local function announce(key)
  local q, turns = key .. ':queue', key .. ':turns'
  local length = tonumber(ARGV[3] or '')
  if length and redis.call('EXISTS', q) == 1 then
    local time = redis.call('TIME')
    local now = tonumber(time[1]) * 1000 + math.floor(tonumber(time[2]) / 1000)
    for _ = 1, 16 do
      local head = redis.call('ZRANGE', q, 0, 0)[1]
      if not head then break end
      local due = tonumber(redis.call('HGET', turns, head))
      local channel = string.match(head, '^(.*)#')
      if channel and (not due or due > now) then
        redis.call('HSET', turns, head, now + length)
        -- The turns live as long as the line: a missed turn must be seen as missed.
        local line = math.max(redis.call('PTTL', q), length)
        if redis.call('PTTL', q) > 0 and redis.call('PTTL', turns) < line then
          redis.call('PEXPIRE', turns, line)
        end
        redis.call('PUBLISH', channel, name .. '|' .. head .. '|' .. key)
        for _, other in ipairs(redis.call('SMEMBERS', key .. ':others')) do
          if other ~= channel then redis.call('PUBLISH', other, name .. '||' .. key) end
        end
        return
      end
      redis.call('ZREM', q, head)
      redis.call('HDEL', turns, head)
    end
  end
  redis.call('PUBLISH', key .. ':released', name)
end

-- '-' is no token (a waiter leaving the line): nothing to delete.
for _, key in ipairs(ARGV[1] ~= '-' and KEYS or {}) do
  if redis.call('GET', key) == ARGV[1] then
    redis.call('DEL', key)
    if ARGV[2] == '1' then
      announce(key)
    end
    released = released + 1
  end
end

local ticket = ARGV[4] or ''
if ticket ~= '' and #KEYS == 1 then
  local q = KEYS[1] .. ':queue'
  if ARGV[5] ~= '' then
    redis.call('ZADD', q, ARGV[5], ticket)
    if redis.call('PTTL', q) < tonumber(ARGV[6]) then redis.call('PEXPIRE', q, ARGV[6]) end
  else
    local first = redis.call('ZRANGE', q, 0, 0)[1] == ticket
    redis.call('ZREM', q, ticket)
    redis.call('HDEL', KEYS[1] .. ':turns', ticket)
    if first and redis.call('EXISTS', KEYS[1]) == 0 and redis.call('EXISTS', q) == 1 then
      name = string.sub(redis.sha1hex(ticket), 1, 16)
      announce(KEYS[1])
    end
  end
end
return released
