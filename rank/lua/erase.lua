-- erase.lua: erase one member from one key space (a board, one shard of a
-- sharded board, or a derived board in its source's group): every key
-- passed is in one slot, so the erasure of that key space is one atomic
-- step (docs/protocol.md §13, R29).
--
-- KEYS[1]  <p>:{b}..:cfg  hash: the config (unused here)
-- KEYS[2]  the key space's change seq, moved by one when anything was
--          removed (a removal changes reads, as in ban.lua); a shard's seq
--          is its tie clock, so a shard passes its cfg here and the caller
--          moves the board's seq
-- KEYS[3]  the erasure's progress hash in this key space (<ks>:er:<hash of
--          the member>, rank/redisstore/erase.go): e += the entries
--          removed, c = 1 once anything was; it lives ARGV[11] ms (an
--          erasure resumed later adds to it; the caller deletes it when done)
-- KEYS[4]  and on: first E keys whose sorted sets hold the member's entries
--          (z:<i>, x:<i>): their removals are the entries counted
-- then O keys that are the member's own (its history lists): deleted whole
-- then any number of other keys that may name it: a hash loses the fields
--          <member> and g|<member> (a global ban's copy), a sorted set or a
--          set the member
-- the last K of which are a cohort board's period hashes k:<i> (member ->
--          its cohort "<tier>.<n>", apply.lua's "cohorts"): the member also
--          leaves the cohort's sorted set k:<i>/<tier>.<n> (the cohort keys
--          are built from the hash's name, as apply.lua builds them, in the
--          same slot). Its seat is not given back: k:<i>/n
--          keeps counting it, so no cohort ever takes more than its size and
--          the members placed after it keep their cohorts (R27); a later
--          event of the member places it anew, in the next seat.
--
-- ARGV[1] unused ("")
-- ARGV[2] unused ("")
-- ARGV[3] unused (0)
-- ARGV[4] unused (0)
-- ARGV[5] unused (0)
-- ARGV[6] member id
-- ARGV[7] E
-- ARGV[8] O
-- ARGV[9] 1 when KEYS[2] is a seq to move, else 0
-- ARGV[10] K
-- ARGV[11] the progress hash's lifetime (ms)
--
-- A sorted set of tiebreak first or last holds "<16 digits>|<member>"; the
-- member's hashes that map it to that form (m:<i>) are read before any
-- field goes, and every form found is removed from every sorted set.
-- The idempotency records are not erased here: finding a member's fields
-- in a bucket hash is a pass over every member's records, which forget.lua
-- makes in bounded HSCAN steps, resumable, so no one call holds Redis for
-- the length of the pass.
--
-- Returns {entries removed, keys changed}.

local m = ARGV[6]
local E, O, K = tonumber(ARGV[7]), tonumber(ARGV[8]), tonumber(ARGV[10])
if not E or not O or not K or #KEYS < 3 + E + O + K then return redis.error_reply('LB bad_request') end

local forms = {m}
local types = {}
for i = 4, #KEYS do
  local t = redis.call('TYPE', KEYS[i])['ok']
  types[i] = t
  if t == 'hash' then
    local v = redis.call('HGET', KEYS[i], m)
    if v and #v > #m and string.sub(v, -#m - 1) == '|' .. m then forms[#forms + 1] = v end
  end
end

local entries, changed = 0, 0

-- The cohort hashes, before the loop below drops their fields.
for i = #KEYS - K + 1, #KEYS do
  local c = redis.call('HGET', KEYS[i], m)
  if c and redis.call('ZREM', KEYS[i] .. '/' .. c, unpack(forms)) > 0 then changed = changed + 1 end
end

for i = 4, #KEYS do
  local k, t, n = KEYS[i], types[i], 0
  if i > 3 + E and i <= 3 + E + O then
    n = redis.call('DEL', k)
  elseif t == 'zset' then
    n = redis.call('ZREM', k, unpack(forms))
    if i <= 3 + E then entries = entries + n end
  elseif t == 'hash' then
    n = redis.call('HDEL', k, m, 'g|' .. m)
  elseif t == 'set' then
    n = redis.call('SREM', k, m)
  end
  if n > 0 then changed = changed + 1 end
end

if changed > 0 then
  if ARGV[9] == '1' then redis.call('INCR', KEYS[2]) end
  redis.call('HINCRBY', KEYS[3], 'e', entries)
  redis.call('HSET', KEYS[3], 'c', 1)
  redis.call('PEXPIRE', KEYS[3], ARGV[11])
end
return {entries, changed}
