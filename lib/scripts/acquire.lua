-- KEYS: resource keys; ARGV[1]: token; ARGV[2]: ttl in ms; ARGV[3]: '1' to count a fenced
-- grant. The wait queue (docs/guide-waiting.md, "Waiting in line"), when ARGV[7] is given:
-- ARGV[4]: the caller's ticket, "<its client's channel>#<n>@<ms>" ('' when it does not wait);
-- ARGV[5]: its place (a number, the same on every node); ARGV[6]: how long the nodes keep the
-- queue for it (ms); ARGV[7]: present when the acquire keeps to the line (its value, the client's
-- turn length, is not read: a turn lasts as long as its waiter's ticket says, "@<ms>", and 100 ms
-- for a ticket without one, as in release.lua).
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
-- A holder's token of this version ends in '.' (lib/core/token.hpp); a waiter that stands in line
-- or signs up here turns it into '!' (keeping the ttl), and so does a grant that leaves
-- others waiting: the holder's release then knows from the value it reads that it has somebody to
-- tell (release.lua). A name is always that of the token with '.'.
-- The line is a courtesy, the lock is not: every command on the line's keys is a pcall, and a
-- line that cannot be kept (a key of another type there, a command the ACL denies, no memory)
-- is a line that is not there. The lock's own commands (GET, PTTL, SET, INCR) are calls.
local ticket = ARGV[4] or ''
local lined = ARGV[7] ~= nil and ticket ~= ''

local function try(...)
  local r = redis.pcall(...)
  if type(r) == 'table' and r.err then return nil end
  return r
end

local function name(text)
  return string.sub(redis.sha1hex(text), 1, 16)
end

local function holder_name(value)
  if string.byte(value, -1) == 33 then value = string.sub(value, 1, -2) .. '.' end
  return name(value)
end

-- Where somebody waits for a key that a token of this version holds, mark it (see above): SET XX
-- KEEPTTL, which the lock's ACL allows anyway; SETRANGE on a server before Redis 6.0. Only ever
-- on a key this script has just read: it exists, and SETRANGE would otherwise create it.
local function mark(key, value)
  if string.byte(value, -1) ~= 46 then return end
  if try('SET', key, string.sub(value, 1, -2) .. '!', 'XX', 'KEEPTTL') == nil then
    try('SETRANGE', key, #value - 1, '!')
  end
end

local function keep(key, ms)
  local left = try('PTTL', key)
  if left and left < tonumber(ms) then try('PEXPIRE', key, ms) end
end

-- True when it now stands in line (one key) or signed up for a key (several).
local function stand_in_line()
  if not lined then return false end
  if #KEYS == 1 then
    local q = KEYS[1] .. ':queue'
    if not try('ZADD', q, ARGV[5], ticket) then return false end
    -- Asking again shows it is alive: a turn it had is over, the next one is new.
    try('HDEL', KEYS[1] .. ':turns', ticket)
    keep(q, ARGV[6])
    return true
  end
  local channel = string.match(ticket, '^(.*)#')
  local signed = false
  for _, key in ipairs(KEYS) do
    if channel and try('SADD', key .. ':others', channel) then
      keep(key .. ':others', ARGV[6])
      signed = true
    end
  end
  return signed
end

for _, key in ipairs(KEYS) do
  local holder = redis.call('GET', key)
  if holder then
    if stand_in_line() then mark(key, holder) end
    return {0, redis.call('PTTL', key), holder_name(holder)}
  end
end

-- The key is free: it is the turn of the first in line, who has a turn's length to come and
-- is told on its client's channel ("<name>|<ticket>|<key>"). A turn not taken in time is lost,
-- and so is one that nobody heard (its client is gone): the waiter loses its place (it takes it
-- again when it next asks), and the turn passes to the next in line.
-- Nothing is written before the grant's SET: a script's first write is where Redis refuses it
-- at maxmemory (OOM), and a node out of memory must refuse, not grant.
local missed = {}
if ARGV[7] ~= nil and #KEYS == 1 then
  local key = KEYS[1]
  local q, turns = key .. ':queue', key .. ':turns'
  local now
  for i = 0, 15 do
    local first = try('ZRANGE', q, i, i)
    local head = first and first[1]
    if not head or head == ticket then break end
    if not now then
      local time = try('TIME')
      if not time then break end
      now = tonumber(time[1]) * 1000 + math.floor(tonumber(time[2]) / 1000)
    end
    local due = tonumber(try('HGET', turns, head))
    if not due then
      local channel = string.match(head, '^(.*)#')
      local heard = channel and try('PUBLISH', channel, name(ARGV[1]) .. '|' .. head .. '|' .. key)
      local length = tonumber(string.match(head, '@(%d+)$')) or 100
      if heard and heard > 0 then due = now + length end
      if due and not try('HSET', turns, head, due) then due = nil end
      if due then
        -- The turns live as long as the line: a missed turn must be seen as missed.
        local line = try('PTTL', q)
        if line and line > 0 then keep(turns, math.max(line, length)) end
      else
        due = now
      end
    end
    if due > now then
      for _, m in ipairs(missed) do
        try('ZREM', q, m)
        try('HDEL', turns, m)
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
    try('ZREM', q, m)
    try('HDEL', turns, m)
  end
end
-- A waiter's grant (the others of its line did not go away) leaves the new holder marked where
-- others still wait. A grant that does not wait leaves it to the next refused waiter.
if ARGV[7] ~= nil then
  for _, key in ipairs(KEYS) do
    if try('EXISTS', key .. ':queue', key .. ':others') ~= 0 then mark(key, ARGV[1]) end
  end
end
return {1, fence}
