package icetime.server;

import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.ConcurrentHashMap;
import org.apache.iceberg.catalog.Catalog;
import org.apache.iceberg.spark.SparkCatalog;
import org.apache.spark.sql.util.CaseInsensitiveStringMap;

/**
 * Iceberg's Spark catalog, with one Iceberg catalog shared by every session of the warm server.
 *
 * <p>Spark gives each Thrift session its own catalog instances; for a JDBC catalog on SQLite
 * that is a connection pool per session, and two sessions committing at once make SQLite refuse
 * one of them (SQLITE_BUSY_SNAPSHOT: a read snapshot older than the other's write). Shared, all
 * of the server's catalog work goes through one pool, whose size the server sets to one
 * connection for SQLite: its commits queue instead of failing.
 */
public final class SharedSparkCatalog extends SparkCatalog {
  private static final Map<String, Catalog> SHARED = new ConcurrentHashMap<>();

  @Override
  protected Catalog buildIcebergCatalog(String name, CaseInsensitiveStringMap options) {
    String key = name + "\u0000" + new TreeMap<>(options.asCaseSensitiveMap());
    return SHARED.computeIfAbsent(key, ignored -> super.buildIcebergCatalog(name, options));
  }
}
