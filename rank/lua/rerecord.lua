-- rerecord.lua: replace idempotency records that exist, as SET XX did for
-- a key per record (a sharded board's follow-up writes the global results
-- into the records its shard wrote, all of a lane round's records of one
-- bucket hash in one call; rank/redisstore/shard_write.go). A record gone
-- meanwhile (its bucket expired) is not written again, so no bucket hash
-- is ever left without its expiry. It uses none of the prelude's helpers,
-- whose KEYS[1] is a cfg hash.
--
-- KEYS[1] <p>:{b#s}:r:<W>.<k>  the records' bucket hash (prelude's records)
-- KEYS[3] unused (the prelude names it; not passed)
-- ARGV[1] a record's field "<m>|<id>"
-- ARGV[2] its new record
-- ARGV[3] the second record's field
-- ARGV[4] its new record
-- ARGV[5] the third record's field, and so on in pairs (the prelude's
--         meanings of ARGV[3..5] do not apply: none of its helpers runs)
--
-- Returns how many records were replaced.

local fields = {}
for i = 1, #ARGV, 2 do fields[#fields + 1] = ARGV[i] end
local had = redis.call('HMGET', KEYS[1], unpack(fields))
local fv = {}
for i, v in ipairs(fields) do
  if had[i] then
    fv[#fv + 1] = v
    fv[#fv + 1] = ARGV[2 * i]
  end
end
if #fv > 0 then redis.call('HSET', KEYS[1], unpack(fv)) end
return #fv / 2
