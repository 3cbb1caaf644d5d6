-- The leader of an office (docs/guide-election.md). An office is a fenced mutex on its lock key,
-- KEYS[1]; its leader key (aux 'leader', lib/core/keys.hpp) holds "term|token|value", without a
-- ttl, and counts only while the lock key holds that token: renewal and release need no change,
-- and a resigned or expired leader reads as vacant.
--
-- ARGV[1] 'write', ARGV[2] token, ARGV[3] term (decimal), ARGV[4] value: the grant's write, after
-- the fencing write-back. Only while this node's lock key holds the token, sets the leader key
-- and publishes "term|value" on the office's channel (KEYS[1] .. ':leader'). Returns 1 when it
-- did, 0 when the lock is not ours here, -1 when the leader key holds another type (nothing is
-- touched in either case).
--
-- ARGV[1] 'resign', ARGV[2] token: after a release of the office (a release announces nothing
-- when nobody waits). Where the leader key names the token and the lock key no longer holds it,
-- deletes the leader key and publishes "|" (vacant) on the office's channel. Returns 1 when it
-- did, else 0.
--
-- ARGV[1] 'read': {term, value, pttl} while the lock key holds the leader's token (pttl: what is
-- left of the lock key's lease, in ms); {} when vacant (a leader key whose token the lock key no
-- longer holds is stale, and is deleted: its token never comes back); -1 when the leader key
-- holds another type, -2 when it holds a string not of our form (neither is touched).

-- The token, or the token marked where somebody waits (acquire.lua, lib/core/token.hpp).
local function holds(value, token)
  if not value or #token == 0 then return false end
  if value == token then return true end
  return string.byte(token, -1) == 46 and value == string.sub(token, 1, -2) .. '!'
end

local function aux(key, kind)
  if string.find(key, '[{}]') then return key .. '\0' .. kind end
  return key .. '\0{' .. key .. '}' .. kind
end

local key = KEYS[1]
local leader = aux(key, 'leader')
local lock = redis.pcall('GET', key)
if type(lock) == 'table' then lock = nil end  -- another type: nobody's lock
local current = redis.pcall('GET', leader)
if type(current) == 'table' and current.err then return -1 end

if ARGV[1] == 'write' then
  local token, term = ARGV[2], ARGV[3]
  if not string.match(term, '^%d+$') then return redis.error_reply('ERR term is not a number') end
  if string.find(token, '|', 1, true) then return redis.error_reply('ERR bad token') end
  if not holds(lock, token) then return 0 end
  redis.call('SET', leader, term .. '|' .. token .. '|' .. ARGV[4])
  redis.pcall('PUBLISH', key .. ':leader', term .. '|' .. ARGV[4])
  return 1
end

if ARGV[1] == 'resign' then
  local _, token = string.match(current or '', '^(%d+)|([^|]*)|')
  if token ~= ARGV[2] or holds(lock, token) then return 0 end
  redis.call('DEL', leader)
  redis.pcall('PUBLISH', key .. ':leader', '|')
  return 1
end

if not current then return {} end
local term, token = string.match(current, '^(%d+)|([^|]*)|')
if not term then return -2 end
if not holds(lock, token) then
  redis.call('DEL', leader)
  return {}
end
return {term, string.sub(current, #term + #token + 3), redis.call('PTTL', key)}
