-- apply_region.lua: apply.lua's block for region boards (§17, R37), on when
-- the apply config has the token "region" (fixed at the board's creation).
-- The call's last block argument, RG, names each event's region, two
-- letters per event in event order: its member's profile country as the
-- gateway knows it (ZZ for none); the profile lives in another slot, so the
-- script cannot read it. Each event places the member's entry in that
-- region, moving it there from the one it was in. Keys built from P
-- (KEYS[1]'s prefix), per period <i>: the hash P .. 'g:<i>' (member ->
-- region), each region's sorted set P .. 'g:<i>/<region>' holding the
-- board's own entries (the same sorted-set members and scores, so ties
-- order as on the board), and the set P .. 'g:<i>/r' of the regions placed
-- in (regions.lua's list). The event's record goes on with
-- ",g<region>.<region rank>" (its rank among the region's entries after its
-- own step; the board's rank and prev_rank stay the board's), and an event
-- that moved its member goes on with ";<region left>" after the record.
--
-- A region's set is written only when its member's entry is. An entry
-- already in the event's region (nearly every event) is found by the write
-- of that region's set itself: the ZREM of its old sorted-set member, a
-- ZADD XX CH of its new score, or a ZSCORE when its score did not change;
-- so it reads no hash. Only a placement (a new member, a move) reads and
-- writes the member's field, the region list and their expiries.
--
-- ARGV[#ARGV-2] RG, the last of the DA block arguments
if opt.region then
  local rgs = ARGV[#ARGV - 2]
  if da < 1 or #rgs ~= 2 * n or sfind(rgs, '[^A-Z]') then return redis.error_reply('LB bad_request') end
  local G = P .. 'g:'

  -- rankIn is the rank in sorted set key of entry z with stored score sc.
  local function rankIn(key, z, sc)
    if tie == 'shared' then return call('ZCOUNT', key, '(' .. sc, '+inf') + 1 end
    return call('ZREVRANK', key, z) + 1
  end

  on.write[#on.write + 1] = function(ev)
    local s, sl = ev.s, ev.sl
    local gk = G .. sl.idx
    local region = string.sub(rgs, 2 * ev.i - 1, 2 * ev.i)
    local rk = gk .. '/' .. region
    local sc = ev.ns -- the stored score (negated on asc boards)
    if not desc then sc = fmt('%d', -ev.new) end
    local here = false
    if ev.had then
      if not ev.changed then
        here = call('ZSCORE', rk, ev.oldz) ~= false
      elseif ev.newz ~= ev.oldz then
        here = call('ZREM', rk, ev.oldz) == 1
        if here then call('ZADD', rk, sc, ev.newz) end
      else
        here = call('ZADD', rk, 'XX', 'CH', sc, ev.newz) == 1
      end
    end
    if not here then
      -- A placement. The field as this call left it (B), else as stored;
      -- a member without an entry has none.
      local from = false
      if ev.had then
        from = batchGet(B, gk, ev.member)
        if from == nil then from = call('HGET', gk, ev.member) end
      end
      if from then
        call('ZREM', gk .. '/' .. from, ev.oldz)
        ev.tail = ';' .. from
      end
      call('ZADD', rk, sc, ev.newz)
      if s == cur then batchSet(B, gk, ev.member, region) else call('HSET', gk, ev.member, region) end
      local added = call('SADD', gk .. '/r', region)
      if sl.exp > now then
        local ttl = sl.exp - now
        call('PEXPIRE', rk, ttl)
        if added == 1 then call('PEXPIRE', gk .. '/r', ttl) end
        if s == cur then batchExpire(B, gk, ttl) else call('PEXPIRE', gk, ttl) end
      end
    end
    ev.extra = (ev.extra or '') .. ',g' .. region .. '.' .. fmt('%d', rankIn(rk, ev.newz, sc))
  end
end
