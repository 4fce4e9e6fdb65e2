package icetime.server;

import java.lang.reflect.Field;
import java.util.HashMap;
import java.util.Map;
import org.apache.iceberg.spark.CommitMetadata;
import org.apache.spark.sql.SparkSession;
import org.apache.spark.sql.SparkSessionExtensions;
import org.apache.spark.sql.catalyst.plans.logical.LogicalPlan;
import scala.Function1;
import scala.runtime.AbstractFunction1;
import scala.runtime.BoxedUnit;

/**
 * A session's {@code spark.sql.iceberg.snapshot-property.<key>} settings in the summary of every
 * Iceberg commit its statements make, on a Spark line whose Iceberg runtime reads them only from
 * write options (Spark 3.5; the 4.x runtimes read the session settings themselves).
 *
 * <p>Iceberg's Spark writers add the properties of {@link CommitMetadata}, a thread-local, to
 * each commit: appends, overwrites, row-level and metadata-only deletes alike. Spark analyses a
 * statement on the thread that then runs it, so a check rule (run once every statement is
 * analysed) sets that thread-local to the analysing session's settings, or clears it when the
 * session has none. No statement commits with another's properties: the next statement on the
 * thread, of whichever session, sets them afresh.
 */
public final class CommitPropertiesExtension
    extends AbstractFunction1<SparkSessionExtensions, BoxedUnit> {
  private static final String PREFIX = "spark.sql.iceberg.snapshot-property.";
  private static final ThreadLocal<Map<String, String>> COMMIT_PROPERTIES = commitProperties();

  @Override
  public BoxedUnit apply(SparkSessionExtensions extensions) {
    extensions.injectCheckRule(new CheckRule());
    return BoxedUnit.UNIT;
  }

  private static final class CheckRule
      extends AbstractFunction1<SparkSession, Function1<LogicalPlan, BoxedUnit>> {
    @Override
    public Function1<LogicalPlan, BoxedUnit> apply(SparkSession session) {
      return new AbstractFunction1<LogicalPlan, BoxedUnit>() {
        @Override
        public BoxedUnit apply(LogicalPlan plan) {
          carry(session);
          return BoxedUnit.UNIT;
        }
      };
    }
  }

  private static void carry(SparkSession session) {
    Map<String, String> properties = new HashMap<>();
    session
        .conf()
        .getAll()
        .foreach(
            new AbstractFunction1<scala.Tuple2<String, String>, BoxedUnit>() {
              @Override
              public BoxedUnit apply(scala.Tuple2<String, String> setting) {
                if (setting._1().startsWith(PREFIX)) {
                  properties.put(setting._1().substring(PREFIX.length()), setting._2());
                }
                return BoxedUnit.UNIT;
              }
            });
    if (properties.isEmpty()) {
      COMMIT_PROPERTIES.remove();
    } else {
      COMMIT_PROPERTIES.set(properties);
    }
  }

  /** Iceberg keeps the thread-local private; its public setter only wraps a callable. */
  @SuppressWarnings("unchecked")
  private static ThreadLocal<Map<String, String>> commitProperties() {
    try {
      Field field = CommitMetadata.class.getDeclaredField("COMMIT_PROPERTIES");
      field.setAccessible(true);
      return (ThreadLocal<Map<String, String>>) field.get(null);
    } catch (ReflectiveOperationException e) {
      throw new IllegalStateException(
          "icetime: this Iceberg runtime has no CommitMetadata.COMMIT_PROPERTIES to carry a"
              + " session's snapshot properties into its commits",
          e);
    }
  }
}
