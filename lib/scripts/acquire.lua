-- KEYS: resource keys; ARGV[1]: token; ARGV[2]: ttl in ms; ARGV[3]: '1' to count a fenced
-- grant. The wait queue (docs/guide-waiting.md, "Waiting in line"), when ARGV[7] is given:
-- ARGV[4]: the caller's ticket, "<its client's channel>#<n>" ('' when it does not wait);
-- ARGV[5]: its place (a number, the same on every node); ARGV[6]: how long the nodes keep the
-- queue for it (ms); ARGV[7]: a turn's length (ms).
-- All keys or none.
-- Returns {1, fence} when granted: with fencing, the highest of the keys' fence counters after
-- incrementing each (<key>:fence, no ttl); without, 0.
-- Returns {0, pttl, holder} when a token holds one of the keys: its remaining ttl and a name for
-- that holder (a digest of its token, never the token itself). Our own token counts too: every
-- attempt has a fresh token, so finding it here means this server was already asked in this
-- attempt under another address (one server listed twice), and it must not vote twice.
-- Returns {0, ms, 'turn:<digest>'} when the key is free but it is another waiter's turn: how
-- long that turn lasts and a name for it.
-- A refused waiter for one key stands in the key's queue (<key>:queue, by place); a refused
-- waiter for several keys asks to hear of their releases (<key>:others, by channel).
local ticket = ARGV[4] or ''
local lined = ARGV[7] ~= nil and ticket ~= ''

local function name(text)
  return string.sub(redis.sha1hex(text), 1, 16)
end

local function keep(key, ms)
  if redis.call('PTTL', key) < tonumber(ms) then redis.call('PEXPIRE', key, ms) end
end

local function stand_in_line()
  if not lined then return end
  if #KEYS == 1 then
    local q = KEYS[1] .. ':queue'
    redis.call('ZADD', q, ARGV[5], ticket)
    -- Asking again shows it is alive: a turn it had is over, the next one is new.
    redis.call('HDEL', KEYS[1] .. ':turns', ticket)
    keep(q, ARGV[6])
  else
    local channel = string.match(ticket, '^(.*)#')
    for _, key in ipairs(KEYS) do
      redis.call('SADD', key .. ':others', channel)
      keep(key .. ':others', ARGV[6])
    end
  end
end

for _, key in ipairs(KEYS) do
  local holder = redis.call('GET', key)
  if holder then
    stand_in_line()
    return {0, redis.call('PTTL', key), name(holder)}
  end
end

-- The key is free: it is the turn of the first in line, who has a turn's length to come and
-- is told on its client's channel ("<name>|<ticket>|<key>"). A turn not taken in time is lost,
-- and the waiter with it (it takes its place again when it next asks).
-- Nothing is written before the grant's SET: a script's first write is where Redis refuses it
-- at maxmemory (OOM), and a node out of memory must refuse, not grant.
local missed = {}
if ARGV[7] ~= nil and #KEYS == 1 then
  local key = KEYS[1]
  local q, turns = key .. ':queue', key .. ':turns'
  local length = tonumber(ARGV[7])
  local now
  for i = 0, 15 do
    local head = redis.call('ZRANGE', q, i, i)[1]
    if not head or head == ticket then break end
    if not now then
      local time = redis.call('TIME')
      now = tonumber(time[1]) * 1000 + math.floor(tonumber(time[2]) / 1000)
    end
    local due = tonumber(redis.call('HGET', turns, head))
    if not due or due > now then
      for _, m in ipairs(missed) do
        redis.call('ZREM', q, m)
        redis.call('HDEL', turns, m)
      end
      if not due then
        due = now + length
        redis.call('HSET', turns, head, due)
        -- The turns live as long as the line: a missed turn must be seen as missed.
        local line = redis.call('PTTL', q)
        if line > 0 then keep(turns, math.max(line, length)) end
        local channel = string.match(head, '^(.*)#')
        if channel then
          redis.call('PUBLISH', channel, name(ARGV[1]) .. '|' .. head .. '|' .. key)
        end
      end
      stand_in_line()
      return {0, due - now, 'turn:' .. string.sub(redis.sha1hex(head), 1, 11)}
    end
    table.insert(missed, head)
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
if #missed > 0 or (lined and #KEYS == 1) then
  local q, turns = KEYS[1] .. ':queue', KEYS[1] .. ':turns'
  if ticket ~= '' then table.insert(missed, ticket) end
  for _, m in ipairs(missed) do
    redis.call('ZREM', q, m)
    redis.call('HDEL', turns, m)
  end
end
return {1, fence}
