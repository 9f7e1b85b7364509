-- apply_cohort.lua: apply.lua's block for cohort boards (§12, R27), on when
-- the apply config has the token "cohort=<size>.<tiers>.<promote>.<demote>"
-- (tiers 0 without a league; fixed at the board's creation). Which cohort
-- a member joins is decided here, so its keys are built from P (KEYS[1]'s
-- prefix): per period <i>, the hash P .. 'k:<i>' (member ->
-- "<tier>.<n>", tier an index from 0 and n the cohort from 1), the hash
-- P .. 'k:<i>/n' (tier -> members placed) and each cohort's sorted set
-- P .. 'k:<i>/<tier>.<n>', whose members are the board's own (so ties
-- order as on the board); per league board the hash P .. 'lg': member ->
-- the tier of its next placement (absent: the lowest), '#open' = the last
-- period placed in and '#exp' = when that period's keys expire. A
-- league's period keys get no expiry until its moves are made
-- (leagueOpen), however late that is. An event's rank and prev_rank are
-- then within the member's cohort (the board's are not read), and its
-- record ends in ",<tier>.<n>".
if opt.cohort then
  local sz, nt, pr, dm = string.match(opt.cohort, '^(%d+)%.(%d+)%.(%d+)%.(%d+)$')
  if not sz then return redis.error_reply('LB bad_request') end
  local co = {size = tonumber(sz), tiers = tonumber(nt), promote = tonumber(pr), demote = tonumber(dm)}
  ranked = false

  -- expireIn gives key the ms left until exp, or drops it when none are.
  local function expireIn(key, exp)
    if exp > now then call('PEXPIRE', key, exp - now) else call('UNLINK', key) end
  end

  -- leagueOpen makes the moves of the last period placed in when the first
  -- member is placed in a later period idx (R27): in each of its cohorts,
  -- by final order, the best promote move one tier up and the worst demote
  -- one down (promotion first in a cohort too small for both), within the
  -- tiers. The others keep their tier, as does a member with no entry in
  -- that period: the tier it last had. The marker '#open' is written in
  -- this same step, so the moves are made once, whichever node places
  -- first; periods nobody played have no moves, so one fold covers any gap.
  local function leagueOpen(idx, exp)
    local lg = P .. 'lg'
    local o = call('HMGET', lg, '#open', '#exp')
    if o[1] and tonumber(o[1]) >= tonumber(idx) then return end
    if o[1] then
      local pk, oexp = P .. 'k:' .. o[1], tonumber(o[2])
      local cnt = call('HGETALL', pk .. '/n')
      for c = 1, #cnt, 2 do
        local t = tonumber(cnt[c])
        for k = 1, math.ceil(tonumber(cnt[c + 1]) / co.size) do
          local ck = pk .. '/' .. cnt[c] .. '.' .. fmt('%d', k)
          local ms = call('ZREVRANGE', ck, 0, -1)
          for i = 1, #ms do
            local step = 0
            if i <= co.promote then step = 1 elseif i > #ms - co.demote then step = -1 end
            local to = math.min(math.max(t + step, 0), co.tiers - 1)
            if to ~= t then
              local id = ms[i]
              if string.sub(id, 17, 17) == '|' then id = string.sub(id, 18) end
              call('HSET', lg, id, fmt('%d', to))
            end
          end
          expireIn(ck, oexp)
        end
      end
      expireIn(pk .. '/n', oexp)
      expireIn(pk, oexp)
    end
    call('HSET', lg, '#open', idx, '#exp', fmt('%d', exp))
  end

  -- cohortJoin is member's cohort in slot sl, placing it when it has none:
  -- the next place of its tier, one HINCRBY in this atomic step (R27: two
  -- nodes placing at once never overfill a cohort). It returns the cohort,
  -- the period's k key, and whether the cohort is new (its set still to be
  -- made).
  local function cohortJoin(sl, member)
    local pk = P .. 'k:' .. sl.idx
    local c = call('HGET', pk, member)
    if c then return c, pk, false end
    local t = '0'
    if co.tiers > 0 then
      leagueOpen(sl.idx, sl.exp)
      t = call('HGET', P .. 'lg', member) or '0'
    end
    local k = call('HINCRBY', pk .. '/n', t, 1) - 1
    c = t .. '.' .. fmt('%d', (k - k % co.size) / co.size + 1)
    call('HSET', pk, member, c)
    if co.tiers == 0 and k == 0 and sl.exp > now then
      call('PEXPIRE', pk .. '/n', sl.exp - now)
      call('PEXPIRE', pk, sl.exp - now)
    end
    return c, pk, k % co.size == 0
  end

  -- rankIn is the rank in sorted set key of entry z with stored score sc.
  local function rankIn(key, z, sc)
    if tie == 'shared' then return call('ZCOUNT', key, '(' .. sc, '+inf') + 1 end
    return call('ZREVRANK', key, z) + 1
  end

  -- The cohort's set follows the board's; prev_rank is read before its
  -- own write.
  hook('write', function(ev)
    local sl = ev.sl
    local cid, pk, fresh = cohortJoin(sl, ev.member)
    local ck = pk .. '/' .. cid
    local prev = 0
    if ev.had then prev = rankIn(ck, ev.oldz, ev.olds) end
    local rank = prev
    if ev.changed then
      if ev.had and ev.newz ~= ev.oldz then call('ZREM', ck, ev.oldz) end
      local sc = ev.ns
      if not desc then sc = fmt('%d', -ev.new) end
      call('ZADD', ck, sc, ev.newz)
      if fresh and co.tiers == 0 and sl.exp > now then call('PEXPIRE', ck, sl.exp - now) end
      rank = rankIn(ck, ev.newz, sc)
    end
    ev.rank, ev.prev = rank, prev
    ev.extra = (ev.extra or '') .. ',' .. cid
  end)
end
