-- The mart equals the hand-derived counts for however many batches have been ingested.
with actual as (
    select batches, orbit_class, objects, active, decayed from {{ ref('orbit_summary') }}
),
expected as (
    select batches, orbit_class, objects, active, decayed
    from {{ ref('expected_orbit_summary') }}
    where batches = (select max(batches) from actual)
)
(select 'missing' as problem, * from expected except select 'missing', * from actual)
union all
(select 'unexpected' as problem, * from actual except select 'unexpected', * from expected)
