-- build.lua: recompute some members of a derived board (PROTOCOL.md §8,
-- R23) from its sources, each member's every view set to its exact sum as
-- of this atomic step. Creating a derived board over sources that hold data
-- runs it over every member, in short calls: apply.lua already maintains
-- the views meanwhile, so a member overwritten here stays exact after.
--
-- KEYS[1]        <p>:{g}..:cfg   hash of the derived board: v = config version
-- KEYS[2]        <p>:{g}..:ban   its ban hash (a banned member's entries go to x)
-- KEYS[3]        <p>:{g}..:n     its names
-- KEYS[2+2v]     <p>:{g}..:z:<i> view v's sorted set (v = 1..K)
-- KEYS[3+2v]     <p>:{g}..:x:<i> view v's hidden entries
-- KEYS[1+2K+3c]  cell c's sorted set: source s, period q (c = 1..C, by period
--                then source, so each view is a range of cells)
-- KEYS[2+2K+3c]  cell c's member hash (tie-prefixed sorted-set members)
-- KEYS[3+2K+3c]  cell c's hidden entries (bans on the source)
-- then the sources' name hashes: a member's name, when the derived board
-- has none yet for it, is the first source's that has one (HSETNX: a name
-- an event wrote meanwhile is newer)
--
-- ARGV[1] config version of the derived board the caller resolved
-- ARGV[2] now in unix ms, or "" to read the server's TIME
-- ARGV[3] K, the number of views
-- ARGV[4] C, the number of cells
-- ARGV[5] order of the sources: desc | asc
-- ARGV[6+3(v-1)], ARGV[7+3(v-1)], ARGV[8+3(v-1)]: view v's first and last
--         cell, and its expiry time in unix ms (0 = never)
-- then C weights, one a cell, then the member ids to recompute.
--
-- A member with an entry in no cell of a view has none in it. Returns the
-- number of members recomputed. Errors "LB <code>": unknown_board, stale.

local err = refused()
if err then return err end
local K, C = tonumber(ARGV[3]), tonumber(ARGV[4])
local asc = ARGV[5] == 'asc'
local now = clockMs()
local vb = 6
local wb = vb + 3 * K
local mb = wb + C
local bkey = KEYS[2]
local bans = redis.call('EXISTS', bkey) == 1
local n = 0
for i = mb, #ARGV do
  local m = ARGV[i]
  local pre, cnt = {[0] = 0}, {[0] = 0}
  for c = 1, C do
    local k = 3 + 2 * K + 3 * (c - 1)
    local zm = redis.call('HGET', KEYS[k + 2], m) or m
    local sc = redis.call('ZSCORE', KEYS[k + 1], zm)
    if not sc then sc = redis.call('ZSCORE', KEYS[k + 3], zm) end
    local v, h = 0, 0
    if sc then
      v = tonumber(sc)
      if asc then v = -v end
      v, h = v * tonumber(ARGV[wb + c - 1]), 1
    end
    pre[c], cnt[c] = pre[c - 1] + v, cnt[c - 1] + h
  end
  local banned = false
  if bans then
    local r = redis.call('HMGET', bkey, m, 'g|' .. m)
    banned = (r[1] or r[2]) and true or false
  end
  for v = 1, K do
    local j = vb + 3 * (v - 1)
    local lo, hi, exp = tonumber(ARGV[j]), tonumber(ARGV[j + 1]), tonumber(ARGV[j + 2])
    local z, x = KEYS[2 + 2 * v], KEYS[3 + 2 * v]
    if exp == 0 or exp > now then
      if cnt[hi] - cnt[lo - 1] > 0 then
        local sum = pre[hi] - pre[lo - 1]
        if asc then sum = -sum end
        local to, other = z, x
        if banned or redis.call('ZSCORE', x, m) then to, other = x, z end
        redis.call('ZADD', to, string.format('%d', sum), m)
        redis.call('ZREM', other, m)
        if exp > 0 and redis.call('PTTL', to) == -1 then redis.call('PEXPIRE', to, exp - now) end
      else
        redis.call('ZREM', z, m)
        redis.call('ZREM', x, m)
      end
    end
  end
  for k = 4 + 2 * K + 3 * C, #KEYS do
    local name = redis.call('HGET', KEYS[k], m)
    if name then
      redis.call('HSETNX', KEYS[3], m, name)
      break
    end
  end
  n = n + 1
end
return n
