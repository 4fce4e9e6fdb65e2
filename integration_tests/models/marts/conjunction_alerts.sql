-- Pairs of active objects whose latest observations put them close together.
-- Separation is approximated from altitude and inclination differences at a common radius.
with latest as (
    select r.*
    from {{ ref('registry') }} as r
    where r.is_active
      and r.last_observed_at = (select max(last_observed_at) from {{ ref('registry') }})
),

pairs as (
    select
        a.object_id as primary_object_id,
        b.object_id as secondary_object_id,
        a.last_observed_at as observed_at,
        abs(a.altitude_km - b.altitude_km) as altitude_gap_km,
        radians(abs(a.inclination_deg - b.inclination_deg))
            * (6371.0 + (a.altitude_km + b.altitude_km) / 2) as plane_gap_km
    from latest as a
    join latest as b
        on a.object_id < b.object_id
       and a.orbit_class = b.orbit_class
       and abs(a.altitude_km - b.altitude_km) <= 5
)

select
    primary_object_id,
    secondary_object_id,
    observed_at,
    round(sqrt(altitude_gap_km * altitude_gap_km + plane_gap_km * plane_gap_km), 2) as miss_distance_km,
    case
        when sqrt(altitude_gap_km * altitude_gap_km + plane_gap_km * plane_gap_km) < 25 then 'red'
        when sqrt(altitude_gap_km * altitude_gap_km + plane_gap_km * plane_gap_km) < 100 then 'amber'
        else 'green'
    end as risk_level
from pairs
where sqrt(altitude_gap_km * altitude_gap_km + plane_gap_km * plane_gap_km) < 250
