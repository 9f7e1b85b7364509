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
-- The caller groups the fields by minute and sends each once, so the
-- script does no string work per event: this call runs once per round
-- for every event of a sharded board, and its per-event Lua was once as
-- much as a whole step's commands.
--
-- KEYS[1] <p>:{b}:seq  string: the board's change sequence
-- KEYS[3] unused (the prelude names it; not passed)
-- ARGV[1] unused
-- ARGV[2] now in unix ms, or "" to read the server's TIME (the one clock)
-- ARGV[3] how long a minute's hash outlives the minute, in ms
-- ARGV[4] the first minute (minutes since the epoch) whose fields follow
-- ARGV[5] its count c, then its c distinct fields "<shard>.<tie µs>", in
--         the order their seqs are given; then the next minute the same
--         way, minutes ascending (the prelude's meanings of ARGV[3..5] do
--         not apply: none of its helpers but clockMs runs)
--
-- Returns the fields' seqs, in order.

local base = string.sub(KEYS[1], 1, -4) .. 'q:' -- KEYS[1] ends in "seq"
local call, argc = redis.call, #ARGV
-- The given seqs (false: none yet), and where each minute's list starts.
local out, starts, o, missing = {}, {}, 0, 0
local i = 4
while i <= argc do
  local c = tonumber(ARGV[i + 1])
  if not c or c < 1 or i + 1 + c > argc then return redis.error_reply('LB bad_request') end
  local got = call('HMGET', base .. ARGV[i], unpack(ARGV, i + 2, i + 1 + c))
  for k = 1, c do
    local v = got[k]
    o = o + 1
    if v then
      out[o] = tonumber(v)
    else
      out[o] = false
      missing = missing + 1
    end
  end
  starts[#starts + 1] = i
  i = i + 2 + c
end
if missing > 0 then
  -- In the order of the fields: the first one met takes the first seq.
  local seq = call('INCRBY', KEYS[1], missing) - missing
  local keep, now = tonumber(ARGV[3]), clockMs()
  o = 0
  for _, at in ipairs(starts) do
    local c = ARGV[at + 1] + 0
    local flat, f = {}, 0
    for k = 1, c do
      o = o + 1
      if not out[o] then
        seq = seq + 1
        out[o] = seq
        flat[f + 1], flat[f + 2] = ARGV[at + 1 + k], seq
        f = f + 2
      end
    end
    if f > 0 then
      local key = base .. ARGV[at]
      call('HSET', key, unpack(flat))
      if call('PTTL', key) < 0 then
        call('PEXPIRE', key, math.max(1, (ARGV[at] + 1) * 60000 + keep - now))
      end
    end
  end
end
return out
