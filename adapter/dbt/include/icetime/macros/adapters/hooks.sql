{% macro run_hooks(hooks, inside_transaction=True) %}
  {#- dbt's run_hooks, without the `commit;` it sends before the first hook that runs outside a
      transaction: Spark has no transactions and refuses COMMIT (dbt-spark's own commit is a
      no-op that never reaches the server). -#}
  {% for hook in hooks | selectattr('transaction', 'equalto', inside_transaction) %}
    {% set rendered = render(hook.get('sql')) | trim %}
    {% if (rendered | length) > 0 %}
      {% call statement(auto_begin=inside_transaction) %}
        {{ rendered }}
      {% endcall %}
    {% endif %}
  {% endfor %}
{% endmacro %}
