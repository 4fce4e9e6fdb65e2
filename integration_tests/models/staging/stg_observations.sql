select
    observation_id,
    object_id,
    observed_at,
    altitude_km,
    inclination_deg,
    sensor,
    -- circular-orbit speed from altitude: sqrt(GM / r), GM in km^3/s^2, Earth radius 6371 km
    round(sqrt(398600.4418 / (6371.0 + altitude_km)), 3) as velocity_kms
from {{ source('raw', 'observations') }}
