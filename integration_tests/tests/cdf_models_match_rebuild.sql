{#- The incrementally maintained models equal the same SQL built from scratch: any row
    returned here is a difference. -#}
with rebuilt_active as (
  select object_id, object_name, object_type, operator, orbit_class, updated_at
  from {{ source('raw', 'objects') }} where status = 'active'
),
rebuilt_counts as (
  select orbit_class, count(*) as objects, count_if(status = 'active') as active
  from {{ source('raw', 'objects') }} group by orbit_class
)
(select 'active_objects: only incremental' as problem, object_id as detail from (
  select * from {{ ref('active_objects') }} except all select * from rebuilt_active))
union all
(select 'active_objects: only rebuilt', object_id from (
  select * from rebuilt_active except all select * from {{ ref('active_objects') }}))
union all
(select 'orbit_counts: differs', null from (
  (select * from {{ ref('orbit_counts') }} except all select * from rebuilt_counts)
  union all
  (select * from rebuilt_counts except all select * from {{ ref('orbit_counts') }})))
