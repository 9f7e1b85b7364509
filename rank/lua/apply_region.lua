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
-- On a board that holds members (apply_hold.lua, whose on.write runs
-- before this block's: file order), a held member's entry is in no
-- region's set, as it is in no period's: the event that holds it places
-- it, reads its region rank and takes it out again; a held member's later
-- events move only its placement (the hash field and the region list),
-- and their region rank is the one it would have in its region's set.
-- Its placement is where hold.lua's clear (and ban.lua's lift, after a
-- ban) puts it back.
--
-- On a board no other block writes for (no holds: nearly every region
-- board), the block is the core's place, given the event's fields as
-- arguments; else a write hook.
--
-- ARGV[#ARGV-2] RG, the last of the DA block arguments
if opt.region then
  local rgs = ARGV[#ARGV - 2]
  if da < 1 or #rgs ~= 2 * n or sfind(rgs, '[^A-Z]') then return redis.error_reply('LB bad_request') end
  local G, sub = P .. 'g:', string.sub

  -- The call's (slot, region) pairs' keys and record formats (the core's
  -- place), made once per call rather than once per event: keys[s] is
  -- slot s's {gk = its groups' hash, r = {[region] = its set}, f =
  -- {[region] = its format}} (and the prefixes they are made of).
  local keys = {}
  -- holds: the board holds members (held: held before the event; holding:
  -- this event holds it).
  local holds = opt.hold ~= nil

  -- placedIn is member's region in the groups' hash gk as this call left
  -- it (B, the prelude's batch), else as stored (false: none).
  local function placedIn(gk, member)
    local set = B.vals[gk]
    local from = set and set[member]
    if from == nil then from = call('HGET', gk, member) end
    return from
  end

  -- step places event i's member (of slot s, table sl) in its region after
  -- the event's write, and returns the record's format (the core's place),
  -- the region rank and the reply's tail (";<region left>", or nil).
  local function step(i, s, sl, member, had, changed, oldz, newz, ns, new, held, holding)
    local region = sub(rgs, 2 * i - 1, 2 * i)
    local t = keys[s]
    if not t then
      local gk = G .. sl.idx
      t = {gk = gk, rp = gk .. '/', fp = '%d,%d,%d,%d,' .. sl.idx .. ',g', r = {}, f = {}}
      keys[s] = t
    end
    local gk, r, f = t.gk, t.r, t.f
    local rk, pre = r[region], f[region]
    if not rk then
      rk, pre = t.rp .. region, t.fp .. region .. '.%d'
      r[region], f[region] = rk, pre
    end
    local sc = ns -- the stored score (negated on asc boards)
    if not desc then sc = fmt('%d', -new) end
    local tail = nil
    if held then
      -- Placed (its field and the region list) without entering the
      -- region's set, ranked where it would be there.
      local from = placedIn(gk, member)
      if from ~= region then
        if from then tail = ';' .. from end
        if s == cur then batchSet(B, gk, member, region) else call('HSET', gk, member, region) end
        local added = call('SADD', gk .. '/r', region)
        if sl.exp > now then
          local ttl = sl.exp - now
          if added == 1 then call('PEXPIRE', gk .. '/r', ttl) end
          if s == cur then batchExpire(B, gk, ttl) else call('PEXPIRE', gk, ttl) end
        end
      end
      return pre, wouldRank(rk, sc, newz), tail -- apply_hold.lua's
    end
    local here = false
    if had then
      if not changed then
        here = call('ZSCORE', rk, oldz) ~= false
      elseif newz ~= oldz then
        here = call('ZREM', rk, oldz) == 1
        if here then call('ZADD', rk, sc, newz) end
      else
        here = call('ZADD', rk, 'XX', 'CH', sc, newz) == 1
      end
    end
    if not here then
      -- A placement. The field as this call left it (B), else as stored;
      -- a member without an entry has none.
      local from = false
      if had then from = placedIn(gk, member) end
      if from then
        call('ZREM', gk .. '/' .. from, oldz)
        tail = ';' .. from
      end
      call('ZADD', rk, sc, newz)
      if s == cur then batchSet(B, gk, member, region) else call('HSET', gk, member, region) end
      local added = call('SADD', gk .. '/r', region)
      if sl.exp > now then
        local ttl = sl.exp - now
        call('PEXPIRE', rk, ttl)
        if added == 1 then call('PEXPIRE', gk .. '/r', ttl) end
        if s == cur then batchExpire(B, gk, ttl) else call('PEXPIRE', gk, ttl) end
      end
    end
    local rank
    if tie == 'shared' then
      rank = call('ZCOUNT', rk, '(' .. sc, '+inf') + 1
    else
      rank = call('ZREVRANK', rk, newz) + 1
    end
    -- Held from this event on: out of its region's set too, its rank the
    -- one read there.
    if holding then call('ZREM', rk, newz) end
    return pre, rank, tail
  end

  if holds or on.write then
    hook('write', function(ev)
      local _, rank, tail = step(ev.i, ev.s, ev.sl, ev.member, ev.had, ev.changed, ev.oldz, ev.newz, ev.ns, ev.new,
        holds and ev.held, holds and ev.holding)
      local extra = ',g' .. sub(rgs, 2 * ev.i - 1, 2 * ev.i) .. '.' .. fmt('%d', rank)
      local before = ev.extra
      if before then extra = before .. extra end
      ev.extra = extra
      if tail then ev.tail = tail .. (ev.tail or '') end -- before a hold's reason
    end)
  else
    place = step
  end
end
