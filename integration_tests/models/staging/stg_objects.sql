select
    object_id,
    object_name,
    object_type,
    operator,
    orbit_class,
    launched_on,
    status = 'active' as is_active,
    updated_at
from {{ source('raw', 'objects') }}
