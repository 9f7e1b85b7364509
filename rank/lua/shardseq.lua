-- shardseq.lua: the board's seqs of events a sharded board applied on its
-- shards without reading ranks (ack_rank none, R24;
-- rank/redisstore/shard_write.go). A shard's step cannot move the board's
-- seq, which lives in the board's own slot, and the seq is taken only
-- after the step (so a read's seq covers what it shows); so the lane
-- round's follow-up gives each applied event its seq here, in one call per
-- board, and keeps it: the field "<shard>.<tie µs>" (the shard and the
-- tie key its step took, which its record holds) of the hash of the
-- event's minute, <p>:{b}:q:<minute>, built from KEYS[1]'s prefix (same
-- hash tag). An event's seq is given once, by whichever call meets it
-- first: its round's follow-up, or one answering a duplicate of it met
-- before that (a retry sent to another node meanwhile); every later call
-- reads it. A minute's hash expires ARGV[3] ms after the minute ends, past
-- the life of any record in it.
--
-- KEYS[1] <p>:{b}:seq  string: the board's change sequence
-- KEYS[3] unused (the prelude names it; not passed)
-- ARGV[1] unused
-- ARGV[2] now in unix ms, or "" to read the server's TIME (the one clock)
-- ARGV[3] how long a minute's hash outlives the minute, in ms
-- ARGV[4] the first event's field "<shard>.<tie µs>"
-- ARGV[5] the second's, and so on, in the order their seqs are given (the
--         prelude's meanings of ARGV[3..5] do not apply: none of its
--         helpers but clockMs runs)
--
-- Returns the events' seqs, in order.

local base = string.sub(KEYS[1], 1, -4) .. 'q:' -- KEYS[1] ends in "seq"
local keep = tonumber(ARGV[3])
local now = clockMs()
-- The events' distinct fields by minute, each minute's read with one
-- HMGET (the same event may come twice: applied, and met as a duplicate
-- by a later event of the round).
local minutes, order, seen = {}, {}, {}
for i = 4, #ARGV do
  local f = ARGV[i]
  if not seen[f] then
    local us = tonumber(string.match(f, '^%d+%.(%d+)$'))
    if not us then return redis.error_reply('LB bad_request') end
    local m = (us - us % 60000000) / 60000000
    local g = minutes[m]
    if not g then
      g = {}
      minutes[m] = g
      order[#order + 1] = m
    end
    g[#g + 1] = f
    seen[f] = false
  end
end
local missing = 0
for _, m in ipairs(order) do
  local g = minutes[m]
  local got = redis.call('HMGET', base .. string.format('%d', m), unpack(g))
  for k = 1, #g do
    if got[k] then seen[g[k]] = tonumber(got[k]) else missing = missing + 1 end
  end
end
if missing > 0 then
  -- In the order of the events: the first field met takes the first seq.
  local next = redis.call('INCRBY', KEYS[1], missing) - missing
  local fresh = {}
  for i = 4, #ARGV do
    local f = ARGV[i]
    if not seen[f] then
      next = next + 1
      seen[f] = next
      fresh[f] = true
    end
  end
  for _, m in ipairs(order) do
    local flat = {}
    for _, f in ipairs(minutes[m]) do
      if fresh[f] then
        flat[#flat + 1] = f
        flat[#flat + 1] = string.format('%d', seen[f])
      end
    end
    if #flat > 0 then
      local key = base .. string.format('%d', m)
      redis.call('HSET', key, unpack(flat))
      if redis.call('PTTL', key) < 0 then
        redis.call('PEXPIRE', key, math.max(1, (m + 1) * 60000 + keep - now))
      end
    end
  end
end
local out = {}
for i = 4, #ARGV do out[i - 3] = seen[ARGV[i]] end
return out
