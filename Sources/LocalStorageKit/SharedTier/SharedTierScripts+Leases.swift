/// The scripts of the shared tier's load leases (see ``SharedTierLease``). Like every script they take the
/// namespace prefix, the writer's clock and the change log's trim rank as `ARGV[1…3]`.
extension SharedTierScripts {
    /// Takes a load's lease: `ARGV[4]` the lease key, `ARGV[5]` the record key, `ARGV[6]` the lease value,
    /// `ARGV[7]` its time to live in ms, `ARGV[8]` the update time and expiry (16 bytes little-endian, as in the
    /// record header) of a record being refreshed, which must still be the server's, empty for a load of a missing
    /// record, `-` to take the lease whatever the server holds; `ARGV[9]` the mark that this request was abandoned (``abandonLease``).
    /// Returns `{1}` when taken (`SET … NX PX`), `{2}` when the server holds a record that makes the load
    /// needless (for a refresh: when it no longer holds the record the refresh served), or `{0, value, pttl}` of the lease or marker in the way (`{0, '', 0}` for an abandoned request,
    /// whose caller no longer waits).
    static let acquireLease = """
        local lease, record, value, px, refreshing = ARGV[4], ARGV[5], ARGV[6], ARGV[7], ARGV[8]
        if ARGV[9] and ARGV[9] ~= '' and redis.call('EXISTS', ARGV[9]) == 1 then return {0, '', 0} end
        if refreshing ~= '-' then
          local rec = redis.call('GET', record)
          if refreshing == '' then
            if rec then return {2} end
          elseif not rec or string.sub(rec, 17, 32) ~= refreshing then
            return {2}
          end
        end
        if redis.call('SET', lease, value, 'NX', 'PX', px) then return {1} end
        return {0, redis.call('GET', lease) or '', redis.call('PTTL', lease)}
        """

    /// Compare and delete (or replace) a lease: `ARGV[4]` the lease key, `ARGV[5]` the value it must hold,
    /// `ARGV[6]` the replacement (empty: delete the key), `ARGV[7]` the replacement's time to live in ms,
    /// `ARGV[8]` a change notice to publish (empty: none; kind `L` wakes the waiters of other instances).
    /// Returns 1 when the key held `ARGV[5]`, else 0 and changes nothing.
    static let settleLease =
        common + """
            local lease, expected, replacement, px, notice = ARGV[4], ARGV[5], ARGV[6], ARGV[7], ARGV[8]
            if redis.call('GET', lease) ~= expected then return 0 end
            if replacement == '' then
              redis.call('DEL', lease)
            else
              redis.call('SET', lease, replacement, 'PX', px)
            end
            if notice ~= '' then
              notify(notice, '')
              trim()
            end
            return 1
            """

    /// Gives back the lease of a request whose caller stopped waiting: `ARGV[4]` the lease key, `ARGV[5]` the
    /// value the request asked for, `ARGV[6]` the request's abandoned mark (``acquireLease``'s `ARGV[9]`),
    /// `ARGV[7]` the mark's time to live in ms, `ARGV[8]` a change notice to publish when the lease is removed.
    /// Returns 1 when the server held the lease (now deleted), else 0 after setting the mark, so that the
    /// request takes no lease if it arrives later (from a connection the caller dropped).
    static let abandonLease =
        common + """
            local lease, expected, mark, px, notice = ARGV[4], ARGV[5], ARGV[6], ARGV[7], ARGV[8]
            if redis.call('GET', lease) == expected then
              redis.call('DEL', lease)
              if notice ~= '' then
                notify(notice, '')
                trim()
              end
              return 1
            end
            redis.call('SET', mark, '1', 'PX', px)
            return 0
            """

    /// ``put`` under a lease: the last two arguments are the lease key and the value it must still hold
    /// (else the error `LEASELOST`, before anything is written). The put itself ends the lease, as every
    /// put ends the lease of the ids it writes (and every delete voids it: `voidLease`).
    static let leasedPut = leaseHeld + put

    /// ``delete`` under a lease, as ``leasedPut``: the refresh of a record its source no longer has deletes it
    /// only while its lease holds, in one step (a write of the id between a check and the delete would
    /// otherwise be deleted with it).
    static let leasedDelete = leaseHeld + delete

    /// The start of a script that runs only under a load's lease: takes the last two arguments, the lease key and
    /// the value it must still hold, and stops with `LEASELOST` (before anything is written) when it does not:
    /// `LEASELOST gone` when the key holds nothing and neither does the namespace's sequence (the server lost its
    /// data: `FLUSHALL`, a restart without it), `LEASELOST voided` otherwise (a write of the id ended or voided the
    /// lease: a put deletes it, so a put and then a delete leave nothing either).
    private static let leaseHeld = """
        local leaseValue = table.remove(ARGV)
        local leaseKey = table.remove(ARGV)
        local held = redis.call('GET', leaseKey)
        if held ~= leaseValue then
          if not held and redis.call('EXISTS', ARGV[1] .. 'seq') == 0 then
            return redis.error_reply('LEASELOST gone: the server lost its data, and the lease with it')
          end
          return redis.error_reply('LEASELOST voided: a write of the id voided the lease')
        end

        """
}
