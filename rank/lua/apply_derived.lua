-- apply_derived.lua: apply.lua's block for a board that derived boards
-- follow (docs/protocol.md §8, R22), on when the call carries their keys
-- (DK > 0): each applied event adds weight × its change to the member's
-- entry in each of the dependants' views its slot s (0 = P, 1 = A, 2 = B)
-- lands in: slot s's views are s+1 .. s+S. An absent entry is created (at
-- weight × d, 0 included: an entry of 0 is an entry); it goes to the
-- hidden set when the member is banned from the derived board (its own
-- bans) or already hidden there. Each dependant's seq moves once per
-- event, written at the end with one INCRBY.
--
-- The dependants are those of the config version of ARGV[1]: deps.lua
-- gives the source a new version whenever its list changes. Per
-- dependant, with span S (1 for a union, the window's periods) and V = S +
-- 2 views (the periods from P on; a board without periods passes its one
-- view V times), after KEYS[11] and in this order:
--   KEYS: its seq, its names hash, its ban hash, then V view sorted sets
--   and V hidden-entry sets (<p>:{g}/<d>:z:<i> and :x:<i>);
-- and before ARGV[#ARGV-1] (DA):
--   ARGV: its weight, S, then V expiry times in unix ms (0 = never).
-- KEYS[11]      <p>:{b}:guard, the last of the board's own keys
-- ARGV[#ARGV-1] DA, the dependants' arguments
-- ARGV[#ARGV]   DK, the dependants' keys
if dk > 0 then
  local deps = {}
  do
    local k, a = 12, #ARGV - 1 - da
    while k <= #KEYS do
      local S = tonumber(ARGV[a + 1])
      local V = S + 2
      local d = {seq = KEYS[k], n = KEYS[k + 1], ban = KEYS[k + 2], w = tonumber(ARGV[a]), S = S, z = {}, x = {}, exp = {}}
      for v = 1, V do
        d.z[v], d.x[v], d.exp[v] = KEYS[k + 2 + v], KEYS[k + 2 + V + v], tonumber(ARGV[a + 1 + v])
      end
      deps[#deps + 1] = d
      k, a = k + 3 + 2 * V, a + 2 + V
    end
  end
  local moved = 0
  hook('write', function(ev)
    moved = moved + 1
    local member, s, had = ev.member, ev.s, ev.had
    for _, dp in ipairs(deps) do
      local amt = dp.w * (ev.new - ev.old)
      if not desc then amt = -amt end
      local banned = false
      if call('EXISTS', dp.ban) == 1 then
        local r = call('HMGET', dp.ban, member, 'g|' .. member)
        banned = (r[1] or r[2]) and true or false
      end
      for v = s + 1, s + dp.S do
        local exp = dp.exp[v]
        if exp == 0 or exp > now then
          local z, x = dp.z[v], dp.x[v]
          local to = z
          if not call('ZSCORE', z, member) and (banned or call('ZSCORE', x, member)) then to = x end
          if amt ~= 0 or not had or not call('ZSCORE', to, member) then
            local fresh = exp > 0 and call('EXISTS', to) == 0
            call('ZINCRBY', to, fmt('%d', amt), member)
            if fresh then call('PEXPIRE', to, exp - now) end
          end
        end
      end
      if ev.name ~= '' then batchSet(B, dp.n, member, ev.name) end
    end
  end)
  hook('finish', function()
    if moved > 0 then
      for _, dp in ipairs(deps) do call('INCRBY', dp.seq, moved) end
    end
  end)
end
