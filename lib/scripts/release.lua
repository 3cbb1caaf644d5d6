-- KEYS: resource keys; ARGV[1]: token; ARGV[2]: '0' not to announce the keys it deletes (the
-- clean-up of a failed attempt, which must never wake a waiter; a waiter leaving the line, below,
-- may still begin the next one's turn), absent or anything else to announce them (a real
-- release). Deletes only keys that hold the token; returns how many.
-- A release is announced under the releaser's name, the one acquire.lua gives a holder (a digest
-- of the token, never the token), so that a client counts one release once, not once per node.
-- When waiters stand in the key's queue (acquire.lua), it is the first one's turn, for as long as
-- its ticket says ("<its client's channel>#<n>@<ms>"; 100 ms without one; MAX_TURN at most): only
-- its client is told, on its channel ("<name>|<ticket>|<key>"), and so are the clients of waiters
-- for several keys ("<name>||<key>"). A turn that nobody hears (the client is gone) passes to the
-- next in line. With nobody in line, the notice goes to the key's channel <key>:released, where
-- the clients of waiters for several keys listen, when such waiters signed up (aux 'others').
-- Auxiliary keys are named from the lock's key, a NUL byte and a kind (aux below, acquire.lua,
-- lib/core/keys.hpp).
-- With ARGV[3], a waiter's ticket, and one key: ARGV[4] a place puts it (back) in line (a failed
-- attempt's clean-up: where it was granted, it left the line), the queue kept ARGV[5] ms; ''
-- takes it out (it stopped waiting: if it was first and the key is free, the next one's turn
-- begins, announced under its ticket's digest). With several keys, ARGV[4] '' takes the
-- waiter's sign-ups out (it was granted, gave up or was cancelled); so does ARGV[6] 'signups' with
-- one key (a waiter for a permit of a semaphore, signed up under the semaphore's lock key).
-- ARGV[6] 'permit' (with ARGV[3] ''): the release of a permit (see the end). ARGV[6] 'shared': a
-- reader of a read-write lock's release, clean-up or leaving the line (see below).
-- The common release, one key and nothing to announce, is sent with the token alone: every
-- argument costs each node time to parse and to hand to Lua, and a name or a turn's length is
-- needed only where somebody waits (docs/performance.md).
-- Every key is deleted before anything is announced, and the line's commands are pcalls (see
-- acquire.lua): nothing about the line can stop a release.

-- Who waits: a token of this version ends in '.' until a waiter stands in the key's line or signs
-- up for it here; acquire.lua then turns it into '!' (lib/core/token.hpp). So a key that still
-- holds the token as given has nobody to tell, and a key that holds it marked has somebody (or
-- had: waiters that gave up leave the mark, and the release is announced to nobody). A token
-- that ends otherwise (an older client's) is asked about: a key with neither a line nor waiters
-- for several keys has nobody waiting, and an error (an ACL without EXISTS) counts as somebody,
-- announced on the key's channel. (A waiter that the node could not put in line, sign up or mark
-- hears nothing from it, and asks again when its fallback timer runs out:
-- docs/guide-waiting.md.) Both forms of the token are the holder's, here and in every script.
--
-- The common release, of one key by its holder with no waiter's ticket and nobody waiting, runs
-- GET and DEL and nothing else, before anything else is defined: every call, closure and step
-- in a script costs the server time that a plain command does not (docs/performance.md).
-- A key's auxiliary key of a kind, in the key's Redis Cluster hash slot (acquire.lua,
-- lib/core/keys.hpp aux_key).
local function aux(key, kind)
  if string.find(key, '[{}]') then return key .. '\0' .. kind end
  return key .. '\0{' .. key .. '}' .. kind
end
-- The lock key a key belongs to: the part before its first NUL. A semaphore's slot key
-- (acquire.lua, permits) is an auxiliary key of the semaphore's lock key, whose line and
-- sign-ups it shares; every other key is its own.
local function base(key)
  local nul = string.find(key, '\0', 1, true)
  if nul then return string.sub(key, 1, nul - 1) end
  return key
end

local freed, checked
if #KEYS == 1 and ARGV[3] == nil and ARGV[1] ~= '-' then
  local value = redis.call('GET', KEYS[1])
  if value == ARGV[1] then
    redis.call('DEL', KEYS[1])
    if ARGV[2] == '0' or string.byte(value, -1) == 46 then return 1 end
    local line = base(KEYS[1])
    if redis.pcall('EXISTS', aux(line, 'queue'), aux(line, 'others')) == 0 then return 1 end
  elseif value and string.byte(ARGV[1], -1) == 46
      and value == string.sub(ARGV[1], 1, -2) .. '!' then
    redis.call('DEL', KEYS[1])
    if ARGV[2] == '0' then return 1 end
  else
    return 0
  end
  freed, checked = {KEYS[1]}, true  -- somebody waits: announce() below tells them
end

local function nobody_waits(key)
  local line = base(key)
  return redis.pcall('EXISTS', aux(line, 'queue'), aux(line, 'others')) == 0
end

local marked = string.byte(ARGV[1], -1) == 46 and string.sub(ARGV[1], 1, -2) .. '!'

-- The releaser's name (see above), worked out only where somebody is told.
local name

-- How long the turn of the waiter with `ticket` lasts (see above): as it says, at most MAX_TURN
-- (acquire.lua says why).
local MAX_TURN = 2000
local function turn_length(ticket)
  return math.min(tonumber(string.match(ticket, '@(%d+)$')) or 100, MAX_TURN)
end

local function try(...)
  local r = redis.pcall(...)
  if type(r) == 'table' and r.err then return nil end
  return r
end

-- `asked`: nobody_waits(key) was asked already, and said no.
local function announce(key, asked)
  if not asked and nobody_waits(key) then return end
  name = name or string.sub(redis.sha1hex(ARGV[1]), 1, 16)
  -- A slot of a semaphore is told under its semaphore's line and channel (base).
  local line = base(key)
  local q = aux(line, 'queue')
  -- The line's first (ZRANGE below): none, or an error (a key of another type, an ACL without
  -- ZRANGE), is no line.
  local time = try('TIME')
  if time then
    local turns = aux(line, 'turns')
    local now = tonumber(time[1]) * 1000 + math.floor(tonumber(time[2]) / 1000)
    -- A semaphore's line serves k slots: a waiter whose turn holds another slot is passed over
    -- (acquire.lua), and the freed slot is the turn of the first after it that has none.
    local semaphore = ARGV[6] == 'permit' or ARGV[6] == 'line' or line ~= key
        or try('EXISTS', aux(line, 'permits')) == 1
    local at = 0
    for _ = 1, 64 do
      local first = try('ZRANGE', q, at, at)
      local head = first and first[1]
      if not head then break end
      local length = turn_length(head)
      local due = tonumber(try('HGET', turns, head))
      local channel = string.match(head, '^(.*)#')
      if semaphore and due and due > now then
        at = at + 1
      else
        local heard = channel and (not due or due > now)
            and try('PUBLISH', channel, name .. '|' .. head .. '|' .. key)
        if heard and heard > 0 then
          -- The turns live as long as the line: a missed turn must be seen as missed. Only a
          -- turns key that took the turn is kept (another type there is left as it is). A line
          -- that runs out in this very millisecond, or while this script runs, reads a PTTL of 0
          -- (Redis 7.0 reads PTTL off the clock, but the script still sees the key): the turns
          -- are then kept the turn's length, and are never left without a ttl.
          if try('HSET', turns, head, now + length) then
            local keep = math.max(try('PTTL', q) or 0, length)
            local left = try('PTTL', turns)
            if left and left < keep then try('PEXPIRE', turns, keep) end
            -- The turn holds the free key for its length (acquire.lua, TURN): an acquire that
            -- does not keep to the line is refused until the waiter comes or the turn ends.
            try('SET', key, 'turn\0' .. head, 'PX', length, 'NX')
          end
          -- The waiters for several keys whose sign-up has not ended, once per client.
          local others = aux(line, 'others')
          try('ZREMRANGEBYSCORE', others, '-inf', now)
          local told = {[channel] = true}
          for _, other in ipairs(try('ZRANGE', others, 0, -1) or {}) do
            local to = string.match(other, '^(.*)#')
            if to and not told[to] then
              told[to] = true
              try('PUBLISH', to, name .. '||' .. key)
            end
          end
          return
        end
        try('ZREM', q, head)
        try('HDEL', turns, head)
      end
    end
  end
  redis.pcall('PUBLISH', line .. ':released', name)
end

-- A reader of a read-write lock (acquire.lua, ARGV[8] 'shared'), ARGV[6] 'shared' with ARGV[2..5]
-- as above (ARGV[3] '' for no line): its release (announced), the clean-up of a failed attempt
-- ('0', with a line: back in line there) and, with the token '-', a reader leaving the line.
-- It takes out its own token from aux(L, 'readers') and nothing else; when no unexpired reader is
-- left, L's marker (READERS) goes, only if L still holds it, and the next waiter's turn begins as
-- for a freed key; otherwise the marker and the set are kept as long as the last reader left,
-- never less. Returns 1 when its token was an unexpired reader here, else 0.
local READERS = 'readers\0'
local reader_released
if ARGV[6] == 'shared' and #KEYS == 1 then
  -- Writes follow TIME: effects replication on a server before Redis 5 (no-op on Redis 7).
  if redis.replicate_commands then pcall(redis.replicate_commands) end
  local L = KEYS[1]
  local readers = aux(L, 'readers')
  freed, reader_released = {}, 0
  -- Its entry counts as released only where its lease had not ended (as a mutex's key that
  -- expired is not there to delete).
  local score = ARGV[1] ~= '-' and redis.call('ZSCORE', readers, ARGV[1])
  local time = score and redis.call('ZREM', readers, ARGV[1]) == 1 and try('TIME')
  if time then
    local now = tonumber(time[1]) * 1000 + math.floor(tonumber(time[2]) / 1000)
    if tonumber(score) > now then reader_released = 1 end
    try('ZREMRANGEBYSCORE', readers, '-inf', now)
    local top = try('ZRANGE', readers, -1, -1, 'WITHSCORES')
    local marker = try('GET', L) == READERS
    if top and top[2] then
      local left = math.max(tonumber(top[2]) - now, 1)
      for _, key in ipairs(marker and {L, readers} or {readers}) do
        local pttl = try('PTTL', key)
        if pttl and pttl > left then try('PEXPIRE', key, left) end
      end
    elseif top and marker then
      redis.call('DEL', L)
      table.insert(freed, L)
    end
  end
end

-- '-' is no token (a waiter leaving the line): nothing to delete.
if not freed then
  freed = {}
  for _, key in ipairs(ARGV[1] ~= '-' and KEYS or {}) do
    local value = redis.call('GET', key)
    if value and (value == ARGV[1] or value == marked) then
      redis.call('DEL', key)
      table.insert(freed, key)
    end
  end
end
if ARGV[2] ~= '0' then
  for _, key in ipairs(freed) do announce(key, checked) end
end

-- A line left behind a key that a token of this version holds marks it, as acquire.lua does, so
-- that its release is announced: that holder may have taken the key without being refused by
-- anybody in line (a quick acquire during a turn whose waiter then left). A waiter put back in
-- line (below) needs not: its attempt, just refused here by any holder, marked it then.
-- (The same function as acquire.lua's: each script is loaded on its own.)
local function mark(key, value)
  if string.byte(value, -1) ~= 46 then return end
  if try('SET', key, string.sub(value, 1, -2) .. '!', 'XX', 'KEEPTTL') == nil then
    try('SETRANGE', key, #value - 1, '!')
  end
end

-- A semaphore's number of permits k (acquire.lua, permits) is kept while a slot of it is held
-- here or a waiter of it stands in its line, and no longer: with neither, it is let go, so that
-- the next acquire may keep another k (guide-semaphore.md).
local function forget_k(line)
  local permits = aux(line, 'permits')
  local k = tonumber(try('GET', permits))
  if not (k and k >= 1 and k <= 1024 and k == math.floor(k)) then return end
  local keys = {line, aux(line, 'queue')}
  for i = 1, k - 1 do keys[#keys + 1] = aux(line, 'slot' .. i) end
  if try('EXISTS', unpack(keys)) == 0 then try('DEL', permits) end
end

local ticket = ARGV[3] or ''
if ticket ~= '' and ARGV[6] == 'line' then
  -- A waiter for a permit leaves its semaphore's line (KEYS: the k slot keys, acquire.lua): its
  -- place, its turn, and the slot its turn holds here, which is then the next one's turn.
  local line = base(KEYS[1])
  local q = aux(line, 'queue')
  try('ZREM', q, ticket)
  try('HDEL', aux(line, 'turns'), ticket)
  for _, key in ipairs(KEYS) do
    if try('GET', key) == 'turn\0' .. ticket then
      try('DEL', key)
      if try('EXISTS', q) == 1 then
        name = string.sub(redis.sha1hex(ticket), 1, 16)
        announce(key, true)
      end
    end
  end
  forget_k(line)
elseif ticket ~= '' and (#KEYS > 1 or ARGV[6] == 'signups') and ARGV[4] == '' then
  -- The sign-ups left then last as long as the latest of them, not SIGN_UP past this waiter's:
  -- acquire.lua's sign_off, the same steps (each script is loaded on its own), says why.
  local left_in = {}
  for _, key in ipairs(KEYS) do
    local others = aux(base(key), 'others')
    if try('ZREM', others, ticket) == 1 then table.insert(left_in, others) end
  end
  local time = #left_in > 0 and try('TIME')
  if time then
    local now = tonumber(time[1]) * 1000 + math.floor(tonumber(time[2]) / 1000)
    for _, others in ipairs(left_in) do
      try('ZREMRANGEBYSCORE', others, '-inf', now)
      local last = try('ZRANGE', others, -1, -1, 'WITHSCORES')
      local ends = last and tonumber(last[2])
      local left = try('PTTL', others)
      if ends and left and left > ends - now then try('PEXPIRE', others, ends - now) end
    end
  end
elseif ticket ~= '' and #KEYS == 1 then
  -- The line of the key's lock key (base): a slot's is its semaphore's.
  local q = aux(base(KEYS[1]), 'queue')
  if ARGV[4] ~= '' then
    if try('ZADD', q, ARGV[4], ticket) then
      local left = try('PTTL', q)
      if left and left < tonumber(ARGV[5]) then try('PEXPIRE', q, ARGV[5]) end
    end
  else
    local first = try('ZRANGE', q, 0, 0)
    try('ZREM', q, ticket)
    try('HDEL', aux(base(KEYS[1]), 'turns'), ticket)
    -- A turn of this waiter's that holds the key ends with it: the key is free again, and it is
    -- the next one's turn even where others stand before it in line (a semaphore's slot).
    local turn_here = first and try('GET', KEYS[1]) == 'turn\0' .. ticket
    if try('GET', KEYS[1]) == 'turn\0' .. ticket then try('DEL', KEYS[1]) end
    if try('EXISTS', q) == 1 then
      -- false: the key is free; nil: it cannot be read (another type), so neither.
      local value = try('GET', KEYS[1])
      if value == READERS and first and first[1] == ticket then
        -- A waiter first in line leaves while readers hold: the readers it held back (a writer
        -- stands before the readers behind it) are told of their turn, up to the next writer.
        local turns = aux(base(KEYS[1]), 'turns')
        local time = try('TIME')
        local now = time and tonumber(time[1]) * 1000 + math.floor(tonumber(time[2]) / 1000)
        name = string.sub(redis.sha1hex(ticket), 1, 16)
        for i = 0, 15 do
          local next_in_line = now and try('ZRANGE', q, i, i)
          local head = next_in_line and next_in_line[1]
          if not head or not string.find(head, '#r%d+@%d+$') then break end
          local channel = string.match(head, '^(.*)#')
          if not try('HGET', turns, head) and channel then
            local heard = try('PUBLISH', channel, name .. '|' .. head .. '|' .. KEYS[1])
            local length = turn_length(head)
            if heard and heard > 0 and try('HSET', turns, head, now + length) then
              local keep, left = math.max(try('PTTL', q) or 0, length), try('PTTL', turns)
              if left and left < keep then try('PEXPIRE', turns, keep) end
            end
          end
        end
      elseif value then
        mark(KEYS[1], value)
      elseif value == false and first and (first[1] == ticket or turn_here) then
        name = string.sub(redis.sha1hex(ticket), 1, 16)
        announce(KEYS[1], true)
      end
    end
  end
end
-- The release of a permit of a semaphore (ARGV[6] 'permit', acquire.lua) that leaves no slot of
-- the semaphore held here, and nobody in its line, lets its number of permits go (forget_k).
if ARGV[6] == 'permit' and #freed > 0 then forget_k(base(KEYS[1])) end
return reader_released or #freed
