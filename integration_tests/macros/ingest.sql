{#-
  Land one batch of raw registry data, the way an ingestion job would: each statement is one
  Iceberg commit. Batch N (1, 2, 3, ...) catalogues 40 new objects, marks some as decayed and
  records one observation of every active object at 2026-04-20 00:00 UTC + 6N hours.
  The data is a pure function of N, so every run of the demo produces the same tables.
-#}
{% macro ingest_batch(batch) %}
  {%- if batch is not number or batch < 1 or batch > 50 or batch != batch | int -%}
    {% do exceptions.raise_compiler_error("ingest_batch: 'batch' must be a whole number from 1 to 50; got " ~ batch) %}
  {%- endif -%}
  {%- set raw = target.database ~ '.' ~ var('raw_schema') -%}
  {%- set first_id = (batch - 1) * 40 + 1 -%}
  {%- set last_id = batch * 40 -%}

  {% do run_query("create namespace if not exists " ~ raw) %}
  {% for statement in create_raw_tables_sql(raw) %}
    {% do run_query(statement) %}
  {% endfor %}

  {% call statement('new_objects') %}
    insert into {{ raw }}.objects
    select
      id as object_id,
      concat('OBJ-', lpad(cast(id as string), 5, '0')) as object_name,
      case id % 5 when 0 then 'DEBRIS' when 1 then 'ROCKET BODY' else 'PAYLOAD' end as object_type,
      element_at(array('ESA', 'NASA', 'JAXA', 'ISRO', 'CNSA', 'SpaceX'), cast(id % 6 + 1 as int)) as operator,
      case id % 4 when 2 then 'MEO' when 3 then 'GEO' else 'LEO' end as orbit_class,
      date_add(date'2020-01-01', cast(id * 11 as int)) as launched_on,
      'active' as status,
      timestamp'2026-04-20 00:00:00' + make_interval(0, 0, 0, 0, {{ batch * 6 }}, 0, 0) as updated_at
    from range({{ first_id }}, {{ last_id + 1 }}) as r(id)
  {% endcall %}

  {% if batch > 1 %}
    {% call statement('decay_objects') %}
      merge into {{ raw }}.objects as o
      using (select id from range(1, {{ first_id }}) as r(id) where id % 7 = {{ batch % 7 }}) as d
      on o.object_id = d.id and o.status = 'active'
      when matched then update set
        status = 'decayed',
        updated_at = timestamp'2026-04-20 00:00:00' + make_interval(0, 0, 0, 0, {{ batch * 6 }}, 0, 0)
    {% endcall %}
  {% endif %}

  {% call statement('observations') %}
    insert into {{ raw }}.observations
    select
      object_id * 1000 + {{ batch }} as observation_id,
      object_id,
      timestamp'2026-04-20 00:00:00' + make_interval(0, 0, 0, 0, {{ batch * 6 }}, 0, 0) as observed_at,
      round(case orbit_class
          when 'LEO' then 400 + (object_id * 37) % 1600
          when 'MEO' then 20000 + (object_id * 13) % 2000
          else 35786 + (object_id % 3)
        end + ((object_id * {{ batch }}) % 5 - 2) * 0.4, 1) as altitude_km,
      round((object_id * 7) % 98 + 0.5, 1) as inclination_deg,
      element_at(array('RADAR-NORTH', 'RADAR-SOUTH', 'OPTICAL-1'), cast(object_id % 3 + 1 as int)) as sensor
    from {{ raw }}.objects
    where status = 'active'
  {% endcall %}

  {{ log("ingest_batch " ~ batch ~ ": objects " ~ first_id ~ "-" ~ last_id ~ " landed in " ~ raw, info=true) }}
{% endmacro %}

{% macro create_raw_tables_sql(raw) %}
  {% do return([
    "create table if not exists " ~ raw ~ ".objects (
       object_id bigint not null, object_name string, object_type string, operator string,
       orbit_class string, launched_on date, status string, updated_at timestamp)
     using iceberg tblproperties ('format-version' = '2')",
    "alter table " ~ raw ~ ".objects set identifier fields object_id",
    "create table if not exists " ~ raw ~ ".observations (
       observation_id bigint, object_id bigint, observed_at timestamp, altitude_km double,
       inclination_deg double, sensor string)
     using iceberg tblproperties ('format-version' = '2')"
  ]) %}
{% endmacro %}

{#- A backfill gone wrong, for the demo's history steps: it blanks the operator and moves every
    object of the first batch to LEO (one Iceberg commit). -#}
{% macro bad_backfill() %}
  {% call statement('bad_backfill') %}
    update {{ target.database }}.{{ var('raw_schema') }}.objects
    set operator = null, orbit_class = 'LEO'
    where object_id <= 40
  {% endcall %}
  {{ log("bad_backfill: 40 objects of " ~ target.database ~ "." ~ var('raw_schema') ~ ".objects overwritten", info=true) }}
{% endmacro %}

{#- A late sensor feed, for the demo's build-skipping step: one more observation of every active
    object, and nothing else (one Iceberg commit to raw.observations; raw.objects does not move). -#}
{% macro late_observations() %}
  {%- set raw = target.database ~ '.' ~ var('raw_schema') -%}
  {% call statement('late_observations') %}
    insert into {{ raw }}.observations
    select
      object_id * 1000 + 999 as observation_id,
      object_id,
      timestamp'2026-04-23 00:00:00' as observed_at,
      400 + (object_id * 37) % 1600 as altitude_km,
      round((object_id * 7) % 98 + 0.5, 1) as inclination_deg,
      'OPTICAL-2' as sensor
    from {{ raw }}.objects
    where status = 'active' and object_id not in (
      select object_id from {{ raw }}.observations where observation_id = object_id * 1000 + 999)
  {% endcall %}
  {{ log("late_observations: a late sensor feed landed in " ~ raw ~ ".observations", info=true) }}
{% endmacro %}

{#- Two status changes of one object, landing between two snapshot runs, for the demo's history
    snapshot step: object 5 starts maneuvering, then is retired (two Iceberg commits). -#}
{% macro status_changes() %}
  {%- set objects = target.database ~ '.' ~ var('raw_schema') ~ '.objects' -%}
  {% for status in ['maneuvering', 'retired'] %}
    {% call statement('status_' ~ status) %}
      update {{ objects }} set status = '{{ status }}', updated_at = current_timestamp()
      where object_id = 5
    {% endcall %}
  {% endfor %}
  {{ log("status_changes: object 5 went maneuvering, then retired (two commits)", info=true) }}
{% endmacro %}
