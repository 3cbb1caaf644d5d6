-- KEYS: resource keys; ARGV[1]: token; ARGV[2]: ttl in ms; ARGV[3]: '1' to count a fenced
-- grant. The wait queue (docs/guide-waiting.md, "Waiting in line"), when ARGV[7] is given:
-- ARGV[4]: the caller's ticket, "<its client's channel>#<n>@<ms>" ('' when it does not wait);
-- ARGV[5]: its place (a number, the same on every node); ARGV[6]: how long the nodes keep the
-- queue for it (ms); ARGV[7]: present when the acquire keeps to the line (its value, the client's
-- turn length, is not read: a turn lasts as long as its waiter's ticket says, "@<ms>", 100 ms
-- for a ticket without one, and never longer than MAX_TURN, as in release.lua).
-- All keys or none.
-- Auxiliary keys (lib/core/keys.hpp, aux below): the lock's key, a NUL byte, then a kind, in the
-- lock key's Redis Cluster hash slot. No resource name or key prefix may hold a NUL (the client
-- refuses it), so no lock key is ever another lock's line, turns, sign-ups or counter.
-- Returns {1, fence} when granted: with fencing, the highest of the keys' fence counters after
-- incrementing each (the key's fence counter, no ttl); without, 0.
-- Returns {0, pttl, holder} when a token holds one of the keys: its remaining ttl and a name for
-- that holder (a digest of its token, never the token itself). Our own token counts too: every
-- attempt has a fresh token, so finding it here means this server was already asked in this
-- attempt under another address (one server listed twice), and it must not vote twice.
-- Returns {0, ms, 'turn:<digest>'} when the key is free but it is another waiter's turn: how
-- long that turn lasts and a name for it.
-- A reader of a read-write lock (ARGV[8] 'shared': see below) is granted or refused as a mutex.
-- A permit of a semaphore (ARGV[8], ARGV[9]: see below) is granted {1, fence} or refused
-- {0, pttl, holder, a free slot or -1}, or {-2, k} when the node keeps another number of permits.
-- A refused waiter for one key stands in the key's queue (aux 'queue', by place); a refused
-- waiter for several keys signs up to hear of their releases (aux 'others': its ticket, scored
-- by when the sign-up ends on this node's clock, SIGN_UP ms after its latest refused attempt;
-- pruned when read, and taken out when it is granted or stops waiting: release.lua).
-- A holder's token of this version ends in '.' (lib/core/token.hpp); a waiter that stands in line
-- or signs up here turns it into '!' (keeping the ttl), and so does a grant that leaves
-- others waiting: the holder's release then knows from the value it reads that it has somebody to
-- tell (release.lua). A name is always that of the token with '.'.
-- The line is a courtesy, the lock is not: every command on the line's keys is a pcall, and a
-- line that cannot be kept (a key of another type there, a command the ACL denies, no memory)
-- is a line that is not there. The lock's own commands (GET, PTTL, SET, INCR) are calls.

-- The common acquire, of one free key without fencing by a caller with nobody waiting before it,
-- runs GET, EXISTS and SET and nothing else, before anything else is defined: every call,
-- closure and step of a script costs each node time that it spends before the next node's
-- reply, and a waiting acquire (the README's) would otherwise pay for the line it finds empty
-- (docs/performance.md). It does exactly what the rest of the script does for such a key: with
-- no line, no turns and no sign-ups there is no turn to honour, nobody to leave or to mark.
-- An EXISTS the ACL denies is an error, not 0: the rest of the script then decides.
-- A key's auxiliary key of a kind, in the key's Redis Cluster hash slot (lib/core/keys.hpp,
-- aux_key): the key, NUL, then the kind, after the key again in braces when the key has no brace
-- (so that it hashes as the key itself); a key with a hash tag keeps it first.
local function aux(key, kind)
  if string.find(key, '[{}]') then return key .. '\0' .. kind end
  return key .. '\0{' .. key .. '}' .. kind
end

if #KEYS == 1 and ARGV[3] ~= '1' and ARGV[8] == nil and not redis.call('GET', KEYS[1]) then
  local key = KEYS[1]
  if ARGV[7] == nil or redis.pcall('EXISTS', aux(key, 'queue'), aux(key, 'turns'),
                                   aux(key, 'others')) == 0 then
    redis.call('SET', key, ARGV[1], 'PX', ARGV[2])
    return {1, 0}
  end
end

local ticket = ARGV[4] or ''
local lined = ARGV[7] ~= nil and ticket ~= ''
-- The longest turn the nodes give, whatever a ticket asks (release.lua has the same): a turn
-- needs a notice and one request, a fraction of a second; a waiter that is slower loses only
-- its turn, not its place. It bounds how long a free key waits for a waiter that listens but
-- does not come (a stopped process). docs/guide-waiting.md.
local MAX_TURN = 2000
-- How long the turn of the waiter with `ticket` lasts: as its ticket says, at most MAX_TURN.
local function turn_length(ticket)
  return math.min(tonumber(string.match(ticket, '@(%d+)$')) or 100, MAX_TURN)
end
-- How long a sign-up lasts past the waiter's latest refused attempt: a crashed waiter's is gone
-- by then. Its client asks again well before (lib/core/keys.hpp, kSignUpRefresh).
local SIGN_UP = 10000

local function try(...)
  local r = redis.pcall(...)
  if type(r) == 'table' and r.err then return nil end
  return r
end

local function name(text)
  return string.sub(redis.sha1hex(text), 1, 16)
end

-- A turn holds the key: the release (or an acquire, below) that begins a waiter's turn sets the
-- free key to TURN .. its ticket for the turn's length, so that an acquire that does not keep to
-- the line (the quick command; another library's script) is refused while the turn lasts, and a
-- waiting acquire may send the quick command first (docs/guide-waiting.md). No token holds a NUL.
-- Such a value is the turn of its ticket only while the line's turns name that ticket: anything
-- else (another program's value) is a holder like any other.
local TURN = 'turn\0'
local function turn_of(key, value)
  if string.sub(value, 1, #TURN) ~= TURN then return nil end
  local head = string.sub(value, #TURN + 1)
  if try('HGET', aux(key, 'turns'), head) then return head end
  return nil
end

local function holder_name(value)
  if string.sub(value, 1, #TURN) == TURN then
    return 'turn:' .. string.sub(redis.sha1hex(string.sub(value, #TURN + 1)), 1, 11)
  end
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

-- This node's clock in ms (read once), or nil when it cannot be read.
local now
local function clock()
  if not now then
    local time = try('TIME')
    if time then now = tonumber(time[1]) * 1000 + math.floor(tonumber(time[2]) / 1000) end
  end
  return now
end

-- True when it now stands in line (one key) or signed up for a key (several).
local function stand_in_line()
  if not lined then return false end
  if #KEYS == 1 then
    local q = aux(KEYS[1], 'queue')
    if not try('ZADD', q, ARGV[5], ticket) then return false end
    -- Asking again shows it is alive: a turn it had is over, the next one is new.
    try('HDEL', aux(KEYS[1], 'turns'), ticket)
    keep(q, ARGV[6])
    return true
  end
  if not string.match(ticket, '^(.*)#') or not clock() then return false end
  local signed = false
  for _, key in ipairs(KEYS) do
    local others = aux(key, 'others')
    if try('ZADD', others, now + SIGN_UP, ticket) then
      try('ZREMRANGEBYSCORE', others, '-inf', now)
      -- No sign-up in it ends later than SIGN_UP from now.
      try('PEXPIRE', others, SIGN_UP)
      signed = true
    end
  end
  return signed
end

-- Takes the waiter's sign-ups out of `keys`' sign-ups. Those left then last as long as the latest of them (its end
-- is its score, on this node's clock), not SIGN_UP past the ones taken out: a waiter that signed
-- up last and is granted (or gives up: release.lua) must not keep, for another SIGN_UP, an
-- earlier waiter's sign-up that its own release could not take out (its node was cut off).
-- Every ZREM comes before the clock is read: no write follows TIME on a server that replicates
-- a script itself rather than its effects.
local function sign_off(keys)
  local left_in = {}
  for _, key in ipairs(keys) do
    local others = aux(key, 'others')
    if try('ZREM', others, ticket) == 1 then table.insert(left_in, others) end
  end
  if #left_in == 0 or not clock() then return end
  for _, others in ipairs(left_in) do
    try('ZREMRANGEBYSCORE', others, '-inf', now)
    local last = try('ZRANGE', others, -1, -1, 'WITHSCORES')
    local ends = last and tonumber(last[2])
    local left = try('PTTL', others)
    if ends and left and left > ends - now then try('PEXPIRE', others, ends - now) end
  end
end

-- True when somebody waits for `key` here: a line, or a sign-up that has not ended.
local function waiting(key)
  local q, others = aux(key, 'queue'), aux(key, 'others')
  if try('EXISTS', q, others) == 0 then return false end
  if clock() then try('ZREMRANGEBYSCORE', others, '-inf', now) end
  return try('EXISTS', q, others) ~= 0
end

-- The fence counter moved: from <key>:fence to <key> NUL fence, then to the Cluster layout (aux
-- 'fence'). A node that has no counter under the current name yet carries the highest legacy
-- one over first (a plain decimal integer: no token of ours looks like that), so that fencing
-- tokens never go backwards across an upgrade. fence.lua does the same. (This can go once every
-- fenced resource has been granted by this version on every node, or its legacy counters were
-- deleted: docs/safety.md.)
local function fence_counter(key)
  local c = aux(key, 'fence')
  if redis.call('EXISTS', c) == 0 then
    local best
    for _, old in ipairs({key .. '\0fence', key .. ':fence'}) do
      local v = old ~= c and redis.pcall('GET', old)
      if type(v) == 'string' and #v <= 15 and string.match(v, '^%d+$')
          and (not best or tonumber(v) > tonumber(best)) then
        best = v
      end
    end
    if best then redis.call('SET', c, best) end
  end
  return c
end

-- A reader of the read-write lock whose lock key is KEYS[1] (L), when ARGV[8] is 'shared'
-- (docs/proposal-kinds.md, "The read-write lock"); ARGV[1..7] as above, ARGV[7] always given
-- (a reader keeps to the line). A writer is a mutex holder of L, unchanged. The readers are
-- the sorted set aux(L, 'readers'): member a reader's token, score the end of its lease in ms
-- on this node's clock; the set's PTTL covers its highest score. While a reader is unexpired
-- here, L holds READERS (below) with a PTTL that covers every reader's score too, so that every
-- mutex acquire (this script, the quick SET NX, another library's) is refused while readers
-- hold. A reader's ticket is "<its client's channel>#r<n>@<ms>" (a writer's has no 'r'), so
-- that the one line tells readers from writers.
-- A reader is granted when L is absent, holds READERS, holds its own turn (TURN .. ticket,
-- named by the line's turns), or holds another reader's turn (readers share it), or a turn that
-- passed; and no live writer stands in the line ahead of it (any live writer at all, for a
-- reader that does not wait). A live waiter's turn has not passed and its client still listens
-- (PUBSUB NUMSUB); a writer ahead whose turn has not begun gets it where L is free, as the
-- mutex's acquire gives it. On a grant: ZADD (its first write: a node out of memory refuses),
-- L and the set kept at least as long as every reader, the one fence counter INCRed when
-- fenced, the reader out of the line, and the readers next in line before the first writer told
-- of their turn on their client's channel ("<name>|<ticket>|<key>"), 16 at most per run.
-- Replies as the mutex's: {1, fence} or {0, ms, holder} ('turn:<digest>' for a waiting writer
-- or a turn that holds L).
local READERS = 'readers\0'
local function reader_ticket(t)
  return string.find(t, '#r%d+@%d+$') ~= nil
end
if ARGV[8] == 'shared' then
  if #KEYS ~= 1 or ARGV[7] == nil then
    return redis.error_reply('ERR redlock: a reader takes one key and the line')
  end
  -- Writes follow TIME below: on a server that replicates a script itself (before Redis 5), they
  -- need effects replication. (A no-op on Redis 7.)
  if redis.replicate_commands then pcall(redis.replicate_commands) end
  local L = KEYS[1]
  local readers, q, turns = aux(L, 'readers'), aux(L, 'queue'), aux(L, 'turns')
  local value = redis.call('GET', L)
  if not clock() then return redis.error_reply('ERR redlock: TIME failed') end
  local function turn_name(who) return 'turn:' .. string.sub(redis.sha1hex(who), 1, 11) end
  -- A waiter is alive while its turn (due: its end, or nil when none began) has not passed and
  -- its client listens on its channel; unknown (an ACL without PUBSUB): alive, its turn's end or
  -- the line's ttl bounds it.
  local function alive(who, due)
    if due and due <= now then return false end
    local channel = string.match(who, '^(.*)#')
    if not channel then return false end
    local subs = try('PUBSUB', 'NUMSUB', channel)
    return not subs or tonumber(subs[2]) ~= 0
  end
  local missed = {}
  -- Drops the waiters whose turn was missed. L must not keep a dropped waiter's turn: a turn
  -- whose waiter has left the turns is no turn but a value that refuses everyone until its ttl
  -- (as the mutex's acquire says below). It holds the turn that runs ahead (`instead`, until
  -- `due`) for what is left of it, or nothing when none runs.
  local function drop_missed(instead, due)
    local held = redis.call('GET', L)
    for _, m in ipairs(missed) do
      try('ZREM', q, m)
      try('HDEL', turns, m)
      if held == TURN .. m then
        if instead and due and due > now then
          try('SET', L, TURN .. instead, 'PX', due - now)
        else
          try('DEL', L)
        end
      end
    end
  end
  local holder = value
  local free = value == false  -- L holds nothing (or a turn that passed): a writer's turn may begin
  if value == READERS then
    holder = false
  elseif value and string.sub(value, 1, #TURN) == TURN then
    local other = string.sub(value, #TURN + 1)
    local due = tonumber(try('HGET', turns, other))
    if due and (other == ticket or reader_ticket(other)) then
      -- A reader's turn: free to readers, and to a writer ahead of them in line, whose turn
      -- then holds L instead (below).
      holder, free = false, true
    elseif due and not alive(other, due) then
      holder, free = false, true
      table.insert(missed, other)
    end
  end
  if holder then
    if lined and stand_in_line() then mark(L, holder) end
    return {0, redis.call('PTTL', L), holder_name(holder)}
  end
  -- L is free to readers: a live writer ahead in line (any, without a ticket) still comes first.
  -- Ahead means before this reader's place (ARGV[5], the same on every node), whether or not it
  -- stands in this node's line yet. A writer's turn begins only where no reader before it has a
  -- turn that runs: that reader comes first (two turns never run at once).
  local place = lined and tonumber(ARGV[5])
  local reader_due, reader_head
  for i = 0, 15 do
    local first = try('ZRANGE', q, i, i, 'WITHSCORES')
    local head = first and first[1]
    if not head or head == ticket then break end
    if place and tonumber(first[2]) and tonumber(first[2]) > place then break end
    if reader_ticket(head) then
      local due = tonumber(try('HGET', turns, head))
      if due and alive(head, due) and due > (reader_due or 0) then
        reader_due, reader_head = due, head
      end
    else
      local due = tonumber(try('HGET', turns, head))
      local live = alive(head, due)
      -- Whose turn L holds in place of this reader's, should this refusal end that (below).
      local instead = due and head
      if live and not due and reader_due then
        due, instead = reader_due, reader_head
      elseif live and not due and free then
        -- L is free: it is this writer's turn, as the mutex's acquire gives it.
        local heard = try('PUBLISH', string.match(head, '^(.*)#'),
                          name(ARGV[1]) .. '|' .. head .. '|' .. L)
        local length = turn_length(head)
        if heard and heard > 0 and try('HSET', turns, head, now + length) then
          try('SET', L, TURN .. head, 'PX', length)
          keep(turns, math.max(try('PTTL', q) or 0, length))
          due = now + length
        else
          table.insert(missed, head)
        end
      elseif live then
        due = due or now
      else
        table.insert(missed, head)
        due = nil
      end
      if due then
        drop_missed(instead, due)
        -- L must not keep a reader's turn that this refusal ends: standing in line again takes
        -- the reader's turn out of the turns, and L would then hold no turn but a value that
        -- refuses everyone, the writer ahead included, until its ttl. It holds the turn that
        -- runs ahead of this reader instead, for what is left of it.
        if instead and due > now and value == TURN .. ticket and redis.call('GET', L) == value then
          try('SET', L, TURN .. instead, 'PX', due - now)
        end
        if lined then stand_in_line() end
        local left = redis.call('PTTL', L)
        if left < 0 then left = math.max(due - now, 0) end
        return {0, left, turn_name(head)}
      end
    end
  end
  -- The grant. Reads first (another type at readers is an error here, before any write). Our own
  -- token already here: this server was asked in this attempt under another address, and must
  -- not vote twice (as for a mutex, above).
  if redis.call('ZSCORE', readers, ARGV[1]) then
    return {0, redis.call('PTTL', L), name(ARGV[1])}
  end
  local ttl = tonumber(ARGV[2])
  local top = redis.call('ZRANGE', readers, -1, -1, 'WITHSCORES')
  local cover = ttl
  if top[2] and tonumber(top[2]) - now > cover then cover = tonumber(top[2]) - now end
  redis.call('ZADD', readers, now + ttl, ARGV[1])
  if value == READERS then
    if redis.call('PTTL', L) < cover then redis.call('PEXPIRE', L, cover) end
  else
    redis.call('SET', L, READERS, 'PX', cover)
  end
  if redis.call('PTTL', readers) < cover then redis.call('PEXPIRE', readers, cover) end
  local fence = 0
  if ARGV[3] == '1' then fence = redis.call('INCR', fence_counter(L)) end
  try('ZREMRANGEBYSCORE', readers, '-inf', now)
  if lined then table.insert(missed, ticket) end
  drop_missed()
  -- The readers next in line, before the first writer, are told of their turn together.
  for i = 0, 15 do
    local first = try('ZRANGE', q, i, i)
    local head = first and first[1]
    if not head or not reader_ticket(head) then break end
    if not try('HGET', turns, head) then
      local channel = string.match(head, '^(.*)#')
      local heard = channel and try('PUBLISH', channel, name(ARGV[1]) .. '|' .. head .. '|' .. L)
      local length = turn_length(head)
      if heard and heard > 0 and try('HSET', turns, head, now + length) then
        keep(turns, math.max(try('PTTL', q) or 0, length))
      end
    end
  end
  return {1, fence}
end

-- A permit of a semaphore (docs/guide-semaphore.md), when ARGV[8] is given: ARGV[8] its number
-- of permits k, ARGV[9] the slot asked for (0 to k - 1); KEYS: the k slot keys in slot order,
-- KEYS[1] the semaphore's lock key L, slot i > 0 aux(L, 'slot' .. i) (lib/core/keys.hpp,
-- slot_key). An attempt asks for one slot, which is a mutex of its own: the node grants that
-- slot when it is free, and nothing else, so two holders of one slot are two holders of one
-- mutex, and there are never more holders than slots. A refusal names the slot's holder, as
-- above, and adds a hint for the client's next attempt (-1: none): the slot that holds this
-- waiter's turn here, else a slot this node saw free.
-- k is kept in aux(L, 'permits') at least as long as any permit granted or renewed here
-- (renew.lua), and as the line while a waiter of it stands there: an acquire with another k is
-- refused with {-2, the k kept here}, never granted.
-- Waiters (a ticket in ARGV[4], ARGV[7] given) stand in one line for all k slots, the
-- semaphore's (aux(L, 'queue') by place, aux(L, 'turns')), and mark the holder of every slot.
-- A freed slot is the turn of the first waiter in line that has no turn yet (release.lua), held
-- for it as a mutex's free key is (TURN); several waiters have turns at once, one a slot. A
-- waiter that asks for a free slot while one ahead of it has no turn begins that one's turn on
-- it; one whose turn is on another slot is passed over, as it has a slot of its own.
if ARGV[8] ~= nil then
  local k, asked = tonumber(ARGV[8]), tonumber(ARGV[9])
  if not k or k ~= #KEYS or not asked or asked < 0 or asked >= k then
    return redis.error_reply('ERR redlock: bad permit arguments')
  end
  local L = KEYS[1]
  local permits = aux(L, 'permits')
  local kept = redis.call('GET', permits)
  if kept and kept ~= ARGV[8] then return {-2, kept} end
  local key = KEYS[asked + 1]
  local holder = redis.call('GET', key)
  local q, turns = aux(L, 'queue'), aux(L, 'turns')
  -- This waiter's turn here: the slot asked for holds it, and the line still names it.
  local mine = lined and holder == TURN .. ticket and try('HGET', turns, ticket)
  if mine then holder = false end
  -- Another waiter's turn whose client no longer listens passes at once, as a mutex's does: to
  -- a waiter, the slot is free (the turn's waiter leaves the line with the grant, below).
  local missed = {}
  local keeps = ARGV[7] ~= nil  -- keeps to the line (a waiter, or a try through the script)
  if keeps and holder and not mine and string.sub(holder, 1, #TURN) == TURN then
    local other = string.sub(holder, #TURN + 1)
    local channel = string.match(other, '^(.*)#')
    local subs = channel and try('PUBSUB', 'NUMSUB', channel)
    if try('HGET', turns, other) and (not channel or (subs and tonumber(subs[2]) == 0)) then
      table.insert(missed, other)
      holder = false
    end
  end
  -- Where this waiter has a turn that has not passed (its due time, on this node's clock).
  local function turn_left(who)
    local due = tonumber(try('HGET', turns, who))
    return due and clock() and due > now
  end
  local function join_line()
    if not try('ZADD', q, ARGV[5], ticket) then return false end
    -- Asking again shows it is alive: a turn of its that passed is over, the next one is new.
    if not turn_left(ticket) then try('HDEL', turns, ticket) end
    keep(q, ARGV[6])
    -- k is kept as long as a waiter of it stands in line: an acquire with another k is refused
    -- meanwhile (above). Otherwise it could give this waiter a turn on a slot beyond its k,
    -- which this waiter never asks for nor clears, and which would refuse everyone to its end.
    local left = try('PTTL', permits)
    if left and left < tonumber(ARGV[6]) then try('SET', permits, ARGV[8], 'PX', ARGV[6]) end
    for _, slot in ipairs(KEYS) do
      local value = try('GET', slot)
      if value then mark(slot, value) end
    end
    return true
  end
  if holder then
    local free = -1
    for i = 1, k - 1 do
      local s = (asked + i) % k
      local value = try('GET', KEYS[s + 1])
      if lined and value == TURN .. ticket and turn_left(ticket) then
        -- Its turn is on another slot: ask for that one, in line as it is.
        return {0, redis.call('PTTL', key), holder_name(holder), s}
      end
      if value == false and free < 0 then
        free = s
        if not lined then break end
      end
    end
    if lined then join_line() end
    return {0, redis.call('PTTL', key), holder_name(holder), free}
  end
  -- The slot is free (or holds this waiter's turn). Another waiter's turn comes first: the
  -- first in line with none yet, before this one in line (if it is), and alive (as for a
  -- mutex's key, a try through the script keeps to the line too).
  if keeps and not mine then
    for i = 0, 15 + k do
      local first = try('ZRANGE', q, i, i)
      local head = first and first[1]
      if not head or head == ticket or not clock() then break end
      local due = tonumber(try('HGET', turns, head))
      local channel = string.match(head, '^(.*)#')
      if due and due > now then
        local subs = channel and try('PUBSUB', 'NUMSUB', channel)
        if not channel or (subs and tonumber(subs[2]) == 0) then table.insert(missed, head) end
        -- else its turn is on another slot: it is passed over here.
      elseif due then
        table.insert(missed, head)
      else
        local heard = channel and try('PUBLISH', channel, name(ARGV[1]) .. '|' .. head .. '|' .. key)
        local length = turn_length(head)
        if heard and heard > 0 and try('HSET', turns, head, now + length) then
          try('SET', key, TURN .. head, 'PX', length)
          keep(turns, math.max(try('PTTL', q) or 0, length))
          for _, m in ipairs(missed) do
            try('ZREM', q, m)
            try('HDEL', turns, m)
          end
          if lined then join_line() end
          return {0, length, 'turn:' .. string.sub(redis.sha1hex(head), 1, 11), -1}
        end
        table.insert(missed, head)
      end
    end
  end
  -- The first write, where a node out of memory refuses: nothing is written before it.
  if redis.call('PTTL', permits) < tonumber(ARGV[2]) then
    redis.call('SET', permits, ARGV[8], 'PX', ARGV[2])
  end
  redis.call('SET', key, ARGV[1], 'PX', ARGV[2])
  local fence = 0
  if ARGV[3] == '1' then fence = redis.call('INCR', fence_counter(L)) end
  if keeps then
    -- A turn of this waiter's on another slot ends: that slot is free again.
    if lined and not mine and try('HGET', turns, ticket) then
      for _, slot in ipairs(KEYS) do
        if slot ~= key and try('GET', slot) == TURN .. ticket then try('DEL', slot) end
      end
    end
    if lined then table.insert(missed, ticket) end
    for _, m in ipairs(missed) do
      try('ZREM', q, m)
      try('HDEL', turns, m)
    end
  end
  if ticket ~= '' then sign_off({L}) end
  if waiting(L) then mark(key, ARGV[1]) end
  return {1, fence}
end

-- A key that holds a turn is free to the line's rules below, for an acquire that keeps to them.
local keeps_line = ARGV[7] ~= nil and #KEYS == 1
for _, key in ipairs(KEYS) do
  local holder = redis.call('GET', key)
  if holder and not (keeps_line and turn_of(key, holder)) then
    if stand_in_line() then mark(key, holder) end
    return {0, redis.call('PTTL', key), holder_name(holder)}
  end
end

-- The key is free: it is the turn of the first in line, who has a turn's length to come and
-- is told on its client's channel ("<name>|<ticket>|<key>"). A turn not taken in time is lost,
-- and so is one that nobody heard (its client is gone): the waiter loses its place (it takes it
-- again when it next asks), and the turn passes to the next in line. So does a turn that began
-- but whose client no longer listens (PUBSUB NUMSUB: its subscriber connections are closed), and
-- a turn lasts MAX_TURN at most.
-- Nothing is written before the grant's SET: a script's first write is where Redis refuses it
-- at maxmemory (OOM), and a node out of memory must refuse, not grant.
local missed = {}
if keeps_line then
  local key = KEYS[1]
  local q, turns = aux(key, 'queue'), aux(key, 'turns')
  for i = 0, 15 do
    local first = try('ZRANGE', q, i, i)
    local head = first and first[1]
    if not head or head == ticket then break end
    if not clock() then break end
    local due = tonumber(try('HGET', turns, head))
    local channel = string.match(head, '^(.*)#')
    if due and due > now then
      -- A turn that began: over when nobody listens on its channel any more (an ACL without
      -- PUBSUB leaves it to MAX_TURN).
      local subs = channel and try('PUBSUB', 'NUMSUB', channel)
      if not channel or (subs and tonumber(subs[2]) == 0) then due = now end
    elseif not due then
      local heard = channel and try('PUBLISH', channel, name(ARGV[1]) .. '|' .. head .. '|' .. key)
      local length = turn_length(head)
      if heard and heard > 0 then due = now + length end
      if due and not try('HSET', turns, head, due) then due = nil end
      if due then
        -- The turn holds the key (see TURN): free, or a turn that passed.
        try('SET', key, TURN .. head, 'PX', length)
        -- The turns live as long as the line: a missed turn must be seen as missed. A line
        -- that runs out in this very millisecond, or while this script runs, reads a PTTL of 0
        -- (Redis 7.0 reads PTTL off the clock, but the script still sees the key): the turns
        -- are then kept the turn's length, and are never left without a ttl.
        keep(turns, math.max(try('PTTL', q) or 0, length))
      else
        due = now
      end
    end
    if due > now then
      -- The key may still hold the turn of a waiter dropped here: one ahead of this head in the
      -- line whose turn began while this one ran (its place was earlier), and then passed. It
      -- holds this head's turn again, for what is left of it: a turn whose head has left the
      -- turns is no turn (turn_of) but a holder, and would keep even this head out until the
      -- dropped turn's length ran out.
      local held = redis.call('GET', key)
      for _, m in ipairs(missed) do
        try('ZREM', q, m)
        try('HDEL', turns, m)
        if held == TURN .. m then try('SET', key, TURN .. head, 'PX', due - now) end
      end
      -- Likewise the caller's own turn, which standing in line again below ends: since a reader
      -- of a read-write lock may begin a turn beside another, a waiter asking at its turn can
      -- find an earlier turn that runs (docs/guide-rwlock.md).
      if ticket ~= '' and held == TURN .. ticket then
        try('SET', key, TURN .. head, 'PX', due - now)
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
    local counter = redis.call('INCR', fence_counter(key))
    if counter > fence then
      fence = counter
    end
  end
end
if #missed > 0 or (lined and #KEYS == 1) then
  local q, turns = aux(KEYS[1], 'queue'), aux(KEYS[1], 'turns')
  if ticket ~= '' then table.insert(missed, ticket) end
  for _, m in ipairs(missed) do
    try('ZREM', q, m)
    try('HDEL', turns, m)
  end
end
-- A waiter for several keys that is granted has signed up for none of them any more.
if lined and #KEYS > 1 then
  sign_off(KEYS)
end
-- A waiter's grant (the others of its line did not go away) leaves the new holder marked where
-- others still wait. A grant that does not wait leaves it to the next refused waiter.
if ARGV[7] ~= nil then
  for _, key in ipairs(KEYS) do
    if waiting(key) then mark(key, ARGV[1]) end
  end
end
return {1, fence}
