-- The write-back of a fencing token. KEYS: resource keys; ARGV[1]: token; ARGV[2]: the fencing
-- token (a decimal integer). Only while this node still holds the token on every key, raises
-- each key's fence counter (aux 'fence', lib/core/keys.hpp) to at least the fencing token.
-- Returns 1 when it did, 0 when the lock is not ours here (nothing touched).
-- Why: a later grant's quorum meets the quorum that ran this in some node; there, the later
-- grant's SET could only succeed after our key was gone, so after this ran, and its INCR returns
-- more than our fencing token. Counters compare as Lua numbers: exact up to 2^53.
-- The token, or the token marked where somebody waits (acquire.lua, lib/core/token.hpp).
-- With ARGV[3] 'shared', a reader of a read-write lock (acquire.lua, KEYS[1] its lock key L): the
-- node holds it while its token is a member of aux(L, 'readers') whose score (its lease's end on
-- this node's clock) has not passed and L holds the readers' marker.
if ARGV[3] == 'shared' then
  if redis.replicate_commands then pcall(redis.replicate_commands) end
  local L = KEYS[1]
  local readers = L .. '\0{' .. L .. '}readers'
  if string.find(L, '[{}]') then readers = L .. '\0readers' end
  local time = redis.call('TIME')
  local now = tonumber(time[1]) * 1000 + math.floor(tonumber(time[2]) / 1000)
  local score = redis.call('ZSCORE', readers, ARGV[1])
  if #KEYS ~= 1 or not score or tonumber(score) <= now or redis.call('GET', L) ~= 'readers\0' then
    return 0
  end
else
  local marked = string.byte(ARGV[1], -1) == 46 and string.sub(ARGV[1], 1, -2) .. '!'
  for _, key in ipairs(KEYS) do
    local value = redis.call('GET', key)
    if not value or (value ~= ARGV[1] and value ~= marked) then
      return 0
    end
  end
end
-- A key's auxiliary key of a kind, in the key's Redis Cluster hash slot (acquire.lua,
-- lib/core/keys.hpp aux_key).
local function aux(key, kind)
  if string.find(key, '[{}]') then return key .. '\0' .. kind end
  return key .. '\0{' .. key .. '}' .. kind
end

-- A node with no counter under the current name yet starts from the highest legacy one, as
-- acquire.lua's fence_counter does: a write-back that created the counter below a legacy value
-- would let a later INCR here hand out a token that an older grant already had.
-- A semaphore's slot key (acquire.lua, permits) counts under its semaphore's lock key, the part
-- before its first NUL: one counter for all its permits.
local function base(key)
  local nul = string.find(key, '\0', 1, true)
  if nul then return string.sub(key, 1, nul - 1) end
  return key
end

local fence = tonumber(ARGV[2])
for _, slot_key in ipairs(KEYS) do
  local key = base(slot_key)
  local c = aux(key, 'fence')
  local current = redis.call('GET', c)
  local counter, carried = tonumber(current or '0'), nil
  if not current then
    for _, old in ipairs({key .. '\0fence', key .. ':fence'}) do
      local v = old ~= c and redis.pcall('GET', old)
      if type(v) == 'string' and #v <= 15 and string.match(v, '^%d+$')
          and tonumber(v) > counter then
        counter, carried = tonumber(v), v
      end
    end
  end
  if counter < fence then
    redis.call('SET', c, ARGV[2])
  elseif carried then
    redis.call('SET', c, carried)
  end
end
return 1
