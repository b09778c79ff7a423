/// The server-side scripts: each runs atomically on the server, so no reader ever sees half a change.
///
/// Every script takes the namespace prefix (`ARGV[1]`), the writer's clock as an 8-byte big-endian time
/// (`ARGV[2]`, for the expiry sweep) and the last rank of the change log to trim (`ARGV[3]`: minus the
/// retention, minus one). Changes get the next
/// number of `{ns}:seq`, an entry in `{ns}:log` (`seq notice`) and a message on `{ns}:changes`
/// (`seq notice record`); the change that gets number 1 also sets `{ns}:epoch` to the writer's clock.
enum SharedTierScripts {
    static let common = """
        local ns, now, trimStop = ARGV[1], ARGV[2], ARGV[3]
        local function frames(blob)
          local list, i = {}, 1
          while i + 3 <= #blob do
            local a, b, c, d = string.byte(blob, i, i + 3)
            local n = ((a * 256 + b) * 256 + c) * 256 + d
            list[#list + 1] = string.sub(blob, i + 4, i + 3 + n)
            i = i + 4 + n
          end
          return list
        end
        -- Moves a record's index entries from its old (set, member) pairs to those of `blob` (none when nil),
        -- touching only the pairs that changed. Blobs of one declaration hold the same sets in the same places:
        -- those are compared pair by pair, with no key made per pair (the Lua work is most of a put's time on
        -- the server). Removals go before additions, so a pair that moved is removed and added back.
        local function reindex(t, id, blob)
          local mkey = ns .. 'm:' .. t
          local old = redis.call('HGET', mkey, id)
          if old == blob or (not old and not blob) then return end
          local new, l = blob and frames(blob) or {}, old and frames(old) or {}
          local aligned = #l == #new
          for j = 1, #new - 1, 2 do
            if not aligned or l[j] ~= new[j] then aligned = false break end
          end
          if aligned then
            for j = 1, #l - 1, 2 do
              if l[j + 1] ~= new[j + 1] then redis.call('ZREM', l[j], l[j + 1]) end
            end
            for j = 1, #new - 1, 2 do
              if l[j + 1] ~= new[j + 1] then redis.call('ZADD', new[j], '0', new[j + 1]) end
            end
          elseif not old then
            for j = 1, #new - 1, 2 do redis.call('ZADD', new[j], '0', new[j + 1]) end
          else
            -- Another declaration on one side: the pairs to keep, found by set and member.
            local wanted = {}
            for j = 1, #new - 1, 2 do
              local members = wanted[new[j]] or {}
              members[new[j + 1]] = 1
              wanted[new[j]] = members
            end
            for j = 1, #l - 1, 2 do
              local members = wanted[l[j]]
              if members and members[l[j + 1]] then members[l[j + 1]] = 2 else redis.call('ZREM', l[j], l[j + 1]) end
            end
            for j = 1, #new - 1, 2 do
              if wanted[new[j]][new[j + 1]] == 1 then redis.call('ZADD', new[j], '0', new[j + 1]) end
            end
          end
          if blob then redis.call('HSET', mkey, id, blob) else redis.call('HDEL', mkey, id) end
        end
        local function unindex(t, id)
          reindex(t, id, nil)
        end
        -- A number given to `redis.call` or joined to a string is formatted by `sprintf("%.14g")`, which
        -- costs more than most commands: the sequence is formatted once, and constants are strings.
        local function notify(notice, record)
          local seq = redis.call('INCR', ns .. 'seq')
          -- A history begins: instances away since the last one must drop their copies, whatever number the
          -- new count has reached by the time they come back (the writer's clock tells histories apart).
          if seq == 1 then redis.call('SET', ns .. 'epoch', now) end
          local text = tostring(seq)
          redis.call('ZADD', ns .. 'log', text, text .. ' ' .. notice)
          redis.call('PUBLISH', ns .. 'changes', text .. ' ' .. notice .. record)
          return seq
        end
        local function trim()
          redis.call('ZREMRANGEBYRANK', ns .. 'log', '0', trimStop)
        end
        -- A delete of an id voids a load's lease on it (a `SharedTierLease`): the lease becomes a remembered nil
        -- that has already ended, under the lease's token, which answers only the callers of other instances
        -- waiting on that load (they find no record and get nil, where they would otherwise load again); it
        -- stays 60 s, long enough for them to hear of the delete, and no longer (a load's timeout may be a
        -- century). A remembered nil still in force goes, an ended one stays for its waiters, anything else goes
        -- (`pcall`: a key of another kind is removed, not an error halfway through the script). A put deletes
        -- the lease key instead (the callers waiting on the load find the record), but for a new expiry alone,
        -- which a refresh waiting on the lease could not tell from the record it set out to reload.
        local endedTime = string.char(128, 0, 0, 0, 0, 0, 0, 0)
        -- A time as 8 bytes big-endian, signed, read as a Lua number (exact to about 256 ns in this century, which
        -- is all a comparison with the writer's clock needs).
        local function signedTime(bytes)
          local n = 0
          for i = 1, 8 do n = n * 256 + string.byte(bytes, i) end
          if string.byte(bytes, 1) >= 128 then n = n - 18446744073709551616 end
          return n
        end
        local function voidLease(key)
          local value = redis.pcall('GET', key)
          if not value then return end
          local kind = type(value) == 'string' and #value == 17 and string.sub(value, 1, 1) or ''
          if kind == 'L' then
            redis.call('SET', key, 'A' .. string.sub(value, 2, 9) .. endedTime, 'PX', '60000')
          elseif kind ~= 'A' or signedTime(string.sub(value, 10, 17)) > signedTime(now) then
            redis.call('DEL', key)
          end
        end
        local function sweep(limit)
          local due = redis.call('ZRANGEBYLEX', ns .. 'e', '-', '(' .. now, 'LIMIT', '0', limit)
          for _, m in ipairs(due) do
            local rest = string.sub(m, 9)
            local colon = string.find(rest, ':', 1, true)
            if colon then
              local t, id = string.sub(rest, 1, colon - 1), string.sub(rest, colon + 1)
              unindex(t, id)
              redis.call('DEL', ns .. 'r:' .. t .. ':' .. id)
            end
            redis.call('ZREM', ns .. 'e', m)
          end
          return #due
        end

        """

    /// Puts records: `ARGV[4…]` in groups of 8: type, id, record, time to live in ms (0 = none), the
    /// framed (set, member) pairs, the notice, the version written, and the expected old updatedAt ‖
    /// expiresAt (16 bytes; empty for none, `-` for "must exist"). A live old record keeps its createdAt.
    /// Returns per record the old createdAt (8 bytes, or empty) and the sequence, or an error
    /// `NEWER …`/`CONFLICT …` before anything was written. A put ends the load lease of each id it writes (the load's
    /// callers find the record); a change of the record's expiry alone voids it (`voidLease`).
    static let put =
        common + """
            local records = {}
            for i = 4, #ARGV, 8 do
              local r = { t = ARGV[i], id = ARGV[i + 1], rec = ARGV[i + 2], ttl = ARGV[i + 3],
                          blob = ARGV[i + 4], notice = ARGV[i + 5], version = tonumber(ARGV[i + 6]),
                          expect = ARGV[i + 7] }
              r.key = ns .. 'r:' .. r.t .. ':' .. r.id
              r.old = redis.call('GET', r.key)
              if r.old and #r.old >= 1 then
                -- A later header layout (magic 0xA9-0xAF), or a whole named header with a payload format above 2,
                -- is a newer version's and is left. A compact header (0xA8) holds a store's own slot numbers, which
                -- no instance writes here: damage, overwritten below.
                local magic, format, low, high = string.byte(r.old, 1, 4)
                local later = magic >= 169 and magic <= 175
                if magic == 167 and #r.old >= 42 then
                  local length = low + high * 256
                  later = format % 64 > 2 and length >= 42 and length <= #r.old
                end
                if later then return redis.error_reply('NEWER ' .. r.id .. ' is stored in a later record format') end
              end
              -- Not a whole record of this layout (its header length out of bounds included): damage, overwritten.
              if r.old and (#r.old < 42 or string.byte(r.old, 1) ~= 167) then r.old = false end
              if r.old then
                local low, high = string.byte(r.old, 3, 4)
                local length = low + high * 256
                if length < 42 or length > #r.old then r.old = false end
              end
              if r.old then
                local a, b, c, d = string.byte(r.old, 5, 8)
                local version = a + b * 256 + c * 65536 + d * 16777216
                if version > r.version then
                  return redis.error_reply('NEWER ' .. r.id .. ' is stored at version ' .. version)
                end
              end
              if r.expect ~= '' then
                if not r.old then return redis.error_reply('CONFLICT ' .. r.id .. ' is absent') end
                if r.expect ~= '-' and string.sub(r.old, 17, 32) ~= r.expect then
                  return redis.error_reply('CONFLICT ' .. r.id .. ' changed')
                end
              end
              records[#records + 1] = r
            end
            local out = {}
            for _, r in ipairs(records) do
              local created = ''
              local rec = r.rec
              if r.old then
                created = string.sub(r.old, 9, 16)
                rec = string.sub(rec, 1, 8) .. created .. string.sub(rec, 17)
              end
              -- Only the (set, member) pairs that changed are removed and added (a save that keeps its
              -- index values rewrites one pair, its update time, not all of them).
              reindex(r.t, r.id, r.blob)
              -- Every write of the id, a new time to live alone (setExpiration) included, wins over a load under way.
              -- A new time to live keeps the update time a refresh compares (the only put that does), so the
              -- refresh waiting on the lease is answered by the voided lease's marker instead (trial87 #1: it took
              -- the lease and reloaded). Told by the update time alone: an instance of another declaration writes
              -- other bytes for the same new expiry (review-88 #5).
              local lease = ns .. 'lease:' .. r.t .. ':' .. r.id
              if r.old and string.sub(r.old, 17, 24) == string.sub(rec, 17, 24) then
                voidLease(lease)
              else
                redis.call('DEL', lease)
              end
              if r.ttl ~= '0' then redis.call('SET', r.key, rec, 'PX', r.ttl) else redis.call('SET', r.key, rec) end
              out[#out + 1] = created
              out[#out + 1] = notify(r.notice, rec)
            end
            trim()
            sweep('100')
            return out
            """

    /// Deletes records (and voids their load leases): `ARGV[4…]` in groups of type, id and the notice. Returns
    /// the sequences.
    static let delete =
        common + """
            local out = {}
            for i = 4, #ARGV, 3 do
              local t, id = ARGV[i], ARGV[i + 1]
              unindex(t, id)
              redis.call('DEL', ns .. 'r:' .. t .. ':' .. id)
              voidLease(ns .. 'lease:' .. t .. ':' .. id)
              out[#out + 1] = notify(ARGV[i + 2], '')
            end
            trim()
            sweep('100')
            return out
            """

    /// Deletes every record of a type and voids its load leases (and remembered nils), as a save or delete
    /// voids those of its id: `ARGV[4]` type, `ARGV[5]` notice, `ARGV[6…]` the type's index sets. The leases
    /// are found with `SCAN … MATCH {ns}:lease:{type}:*` (the namespace and type are escaped so that neither
    /// holds a colon; glob characters in them are escaped for the match).
    static let clear =
        common + """
            local t = ARGV[4]
            local ids = redis.call('ZRANGE', ns .. 'k:' .. t, 0, -1)
            for _, id in ipairs(ids) do
              unindex(t, id)
              redis.call('DEL', ns .. 'r:' .. t .. ':' .. id)
            end
            redis.call('DEL', ns .. 'k:' .. t, ns .. 'u:' .. t, ns .. 'm:' .. t)
            for i = 6, #ARGV do redis.call('DEL', ARGV[i]) end
            local pattern = string.gsub(ns .. 'lease:' .. t .. ':', '[%*%?%[%]\\\\]', '\\\\%0') .. '*'
            local cursor = '0'
            repeat
              local page = redis.call('SCAN', cursor, 'MATCH', pattern, 'COUNT', 1000)
              cursor = page[1]
              for _, key in ipairs(page[2]) do voidLease(key) end
            until cursor == '0'
            local seq = notify(ARGV[5], '')
            trim()
            return seq
            """

    /// Removes records that expired by `now`, with their index members; returns how many (at most 1,000).
    static let sweep =
        common + """
            return sweep('1000')
            """
}
