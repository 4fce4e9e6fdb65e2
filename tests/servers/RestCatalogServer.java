// A REST catalog for icetime's tests: Iceberg's own request handlers (CatalogHandlers, in the
// Spark runtime jar) served over HTTP on loopback, backed by a JDBC catalog whose files live on
// S3. Spec-faithful where the tests need it: OAuth2 client credentials, tables, views,
// register_table, and a 409 on a commit conflict.
//
// Usage: java -cp <runtime jar>:<aws jars>:<sqlite jar>:<this> RestCatalogServer PORT CLIENT_ID:SECRET
//        key=value...   (the backing JdbcCatalog's properties: uri, warehouse, io-impl, s3.*;
//                        and rest.warehouse-name, the name clients may give as their warehouse)
// Test hook: POST /test/conflicts with a number makes that many next table commits fail with 409;
// GET /test/conflicts says how many are left.
// A request that takes longer than REQUEST_TIMEOUT_S (its storage is down, and Iceberg's catalog
// retries a metadata read for up to ten minutes) is answered 503 Service Unavailable.

import com.sun.net.httpserver.HttpExchange;
import com.sun.net.httpserver.HttpServer;
import java.io.IOException;
import java.io.OutputStream;
import java.net.InetSocketAddress;
import java.net.URLDecoder;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Base64;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.UUID;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.AtomicInteger;
import org.apache.iceberg.catalog.Namespace;
import org.apache.iceberg.catalog.TableIdentifier;
import org.apache.iceberg.exceptions.AlreadyExistsException;
import org.apache.iceberg.exceptions.CommitFailedException;
import org.apache.iceberg.exceptions.NamespaceNotEmptyException;
import org.apache.iceberg.exceptions.NoSuchNamespaceException;
import org.apache.iceberg.exceptions.NoSuchTableException;
import org.apache.iceberg.exceptions.NoSuchViewException;
import org.apache.iceberg.exceptions.NotFoundException;
import org.apache.iceberg.exceptions.NotAuthorizedException;
import org.apache.iceberg.exceptions.ServiceUnavailableException;
import org.apache.iceberg.exceptions.ValidationException;
import org.apache.iceberg.jdbc.JdbcCatalog;
import org.apache.iceberg.rest.CatalogHandlers;
import org.apache.iceberg.rest.Endpoint;
import org.apache.iceberg.rest.RESTCatalogProperties.SnapshotMode;
import org.apache.iceberg.rest.RESTUtil;
import org.apache.iceberg.rest.requests.CreateNamespaceRequest;
import org.apache.iceberg.rest.requests.CreateTableRequest;
import org.apache.iceberg.rest.requests.CreateViewRequest;
import org.apache.iceberg.rest.requests.RegisterTableRequest;
import org.apache.iceberg.rest.requests.RenameTableRequest;
import org.apache.iceberg.rest.requests.UpdateNamespacePropertiesRequest;
import org.apache.iceberg.rest.requests.UpdateTableRequest;
import org.apache.iceberg.rest.responses.ConfigResponse;
import org.apache.iceberg.rest.responses.ErrorResponse;
import org.apache.iceberg.rest.responses.OAuthTokenResponse;
import org.apache.iceberg.shaded.com.fasterxml.jackson.databind.ObjectMapper;

public class RestCatalogServer {
  private final JdbcCatalog catalog = new JdbcCatalog();
  private final ObjectMapper json = restMapper();
  private final String clientId;
  private final String clientSecret;
  // The warehouse a client may ask for at /v1/config, by name or location (like Polaris and
  // Lakekeeper, which answer an unknown one with 404).
  private final Set<String> warehouses;
  private final Set<String> tokens = ConcurrentHashMap.newKeySet();
  private final AtomicInteger conflicts = new AtomicInteger();
  private final ExecutorService work = Executors.newCachedThreadPool();
  private static final long REQUEST_TIMEOUT_S = 10;
  // The REST spec's default separator of namespace levels in a path or query (URL-encoded).
  private static final String NAMESPACE_SEPARATOR = "%1F";

  RestCatalogServer(String credential, Map<String, String> properties) {
    String[] parts = credential.split(":", 2);
    this.clientId = parts[0];
    this.clientSecret = parts[1];
    this.warehouses = Set.of(properties.get("rest.warehouse-name"), properties.get("warehouse"));
    catalog.setConf(new org.apache.hadoop.conf.Configuration());
    catalog.initialize("rest_backing", properties);
  }

  public static void main(String[] args) throws IOException {
    int port = Integer.parseInt(args[0]);
    Map<String, String> properties = new HashMap<>();
    for (int i = 2; i < args.length; i++) {
      String[] kv = args[i].split("=", 2);
      properties.put(kv[0], kv[1]);
    }
    RestCatalogServer server = new RestCatalogServer(args[1], properties);
    HttpServer http = HttpServer.create(new InetSocketAddress("127.0.0.1", port), 64);
    http.createContext("/", server::handle);
    http.setExecutor(Executors.newFixedThreadPool(8));
    http.start();
    System.out.println("listening on 127.0.0.1:" + port);
  }

  private void handle(HttpExchange exchange) throws IOException {
    try {
      String method = exchange.getRequestMethod();
      String path = exchange.getRequestURI().getRawPath();
      byte[] body = exchange.getRequestBody().readAllBytes();
      if (path.equals("/test/conflicts")) {
        if (method.equals("POST")) {
          conflicts.set(Integer.parseInt(new String(body, StandardCharsets.UTF_8).trim()));
          reply(exchange, 204, null);
        } else {
          reply(exchange, 200, conflicts.get());
        }
        return;
      }
      if (path.equals("/v1/oauth/tokens")) {
        reply(exchange, 200, token(new String(body, StandardCharsets.UTF_8)));
        return;
      }
      String auth = exchange.getRequestHeaders().getFirst("Authorization");
      if (auth == null || !tokens.contains(auth.replaceFirst("^Bearer ", ""))) {
        throw new NotAuthorizedException("Not authorized: a valid bearer token is required");
      }
      Future<Object> pending = work.submit(() -> route(method, path.split("/"), body, exchange));
      Object response;
      try {
        response = pending.get(REQUEST_TIMEOUT_S, TimeUnit.SECONDS);
      } catch (TimeoutException e) {
        pending.cancel(true);
        throw new ServiceUnavailableException(
            "%s %s took more than %d s (is the storage down?)", method, path, REQUEST_TIMEOUT_S);
      } catch (ExecutionException e) {
        Throwable cause = e.getCause();
        if (cause instanceof Exception) {
          throw (Exception) cause;
        }
        throw (Error) cause;
      }
      reply(exchange, response == null ? 204 : 200, response);
    } catch (Exception | LinkageError e) {
      int code = status(e);
      ErrorResponse error =
          ErrorResponse.builder()
              .responseCode(code)
              .withType(e.getClass().getSimpleName())
              .withMessage(String.valueOf(e.getMessage()))
              .build();
      reply(exchange, code, error);
    }
  }

  private Object token(String form) {
    Map<String, String> fields = new HashMap<>();
    for (String pair : form.split("&")) {
      String[] kv = pair.split("=", 2);
      if (kv.length == 2) {
        fields.put(decode(kv[0]), decode(kv[1]));
      }
    }
    if (!clientId.equals(fields.get("client_id"))
        || !clientSecret.equals(fields.get("client_secret"))) {
      throw new NotAuthorizedException("Not authorized: unknown client credentials");
    }
    String token = UUID.randomUUID().toString();
    tokens.add(token);
    return OAuthTokenResponse.builder()
        .withToken(token)
        .withTokenType("bearer")
        .withIssuedTokenType("urn:ietf:params:oauth:token-type:access_token")
        .setExpirationInSeconds(3600)
        .build();
  }

  private Object route(String method, String[] p, byte[] body, HttpExchange exchange)
      throws IOException {
    // p[0] is "", p[1] is "v1".
    int n = p.length;
    if (n == 3 && p[2].equals("config")) {
      String wanted = query(exchange, "warehouse");
      if (wanted != null && !warehouses.contains(wanted)) {
        throw new NotFoundException("Warehouse '%s' does not exist in this catalog", wanted);
      }
      return ConfigResponse.builder().withEndpoints(endpoints()).build();
    }
    if (n == 4 && p[2].equals("tables") && p[3].equals("rename")) {
      CatalogHandlers.renameTable(catalog, read(body, RenameTableRequest.class));
      return null;
    }
    if (n == 4 && p[2].equals("views") && p[3].equals("rename")) {
      CatalogHandlers.renameView(catalog, read(body, RenameTableRequest.class));
      return null;
    }
    if (n < 3 || !p[2].equals("namespaces")) {
      throw new IllegalArgumentException("No route for " + method + " " + String.join("/", p));
    }
    if (n == 3) {
      if (method.equals("POST")) {
        return CatalogHandlers.createNamespace(catalog, read(body, CreateNamespaceRequest.class));
      }
      String parent = query(exchange, "parent");
      Namespace ns = parent == null ? Namespace.empty() : RESTUtil.decodeNamespace(parent, NAMESPACE_SEPARATOR);
      return CatalogHandlers.listNamespaces(catalog, ns);
    }
    Namespace ns = RESTUtil.decodeNamespace(decode(p[3]), NAMESPACE_SEPARATOR);
    if (n == 4) {
      switch (method) {
        case "HEAD":
          CatalogHandlers.namespaceExists(catalog, ns);
          return null;
        case "DELETE":
          CatalogHandlers.dropNamespace(catalog, ns);
          return null;
        default:
          return CatalogHandlers.loadNamespace(catalog, ns);
      }
    }
    String kind = p[4];
    if (n == 5 && kind.equals("properties")) {
      return CatalogHandlers.updateNamespaceProperties(
          catalog, ns, read(body, UpdateNamespacePropertiesRequest.class));
    }
    if (n == 5 && kind.equals("register")) {
      return CatalogHandlers.registerTable(catalog, ns, read(body, RegisterTableRequest.class));
    }
    if (n == 5 && kind.equals("tables")) {
      if (method.equals("POST")) {
        CreateTableRequest request = read(body, CreateTableRequest.class);
        return request.stageCreate()
            ? CatalogHandlers.stageTableCreate(catalog, ns, request)
            : CatalogHandlers.createTable(catalog, ns, request);
      }
      return CatalogHandlers.listTables(catalog, ns);
    }
    if (n == 5 && kind.equals("views")) {
      if (method.equals("POST")) {
        return CatalogHandlers.createView(catalog, ns, read(body, CreateViewRequest.class));
      }
      return CatalogHandlers.listViews(catalog, ns);
    }
    TableIdentifier id = TableIdentifier.of(ns, decode(p[5]));
    if (n == 7 && p[6].equals("metrics")) {
      return null;
    }
    if (n != 6) {
      throw new IllegalArgumentException("No route for " + method + " " + String.join("/", p));
    }
    if (kind.equals("tables")) {
      switch (method) {
        case "HEAD":
          CatalogHandlers.tableExists(catalog, id);
          return null;
        case "DELETE":
          if ("true".equals(query(exchange, "purgeRequested"))) {
            CatalogHandlers.purgeTable(catalog, id);
          } else {
            CatalogHandlers.dropTable(catalog, id);
          }
          return null;
        case "POST":
          if (conflicts.getAndUpdate(c -> Math.max(0, c - 1)) > 0) {
            throw new CommitFailedException("Injected commit conflict on %s", id);
          }
          return CatalogHandlers.updateTable(catalog, id, read(body, UpdateTableRequest.class));
        default:
          return CatalogHandlers.loadTable(catalog, id, SnapshotMode.ALL);
      }
    }
    if (kind.equals("views")) {
      switch (method) {
        case "HEAD":
          CatalogHandlers.viewExists(catalog, id);
          return null;
        case "DELETE":
          CatalogHandlers.dropView(catalog, id);
          return null;
        case "POST":
          return CatalogHandlers.updateView(catalog, id, read(body, UpdateTableRequest.class));
        default:
          return CatalogHandlers.loadView(catalog, id);
      }
    }
    throw new IllegalArgumentException("No route for " + method + " " + String.join("/", p));
  }

  /** Iceberg's own REST JSON mapper (package-private in the runtime jar, so reached by name). */
  private static ObjectMapper restMapper() {
    try {
      java.lang.reflect.Method mapper =
          Class.forName("org.apache.iceberg.rest.RESTObjectMapper").getDeclaredMethod("mapper");
      mapper.setAccessible(true);
      return (ObjectMapper) mapper.invoke(null);
    } catch (ReflectiveOperationException e) {
      throw new IllegalStateException("Iceberg's REST object mapper is not on the class path", e);
    }
  }

  private static List<Endpoint> endpoints() {
    List<Endpoint> all = new ArrayList<>();
    for (java.lang.reflect.Field field : Endpoint.class.getFields()) {
      if (field.getType() == Endpoint.class && !field.getName().contains("PLAN")
          && !field.getName().contains("CREDENTIALS")
          && !field.getName().contains("TRANSACTION")) {
        try {
          all.add((Endpoint) field.get(null));
        } catch (IllegalAccessException e) {
          throw new IllegalStateException(e);
        }
      }
    }
    return all;
  }

  private static int status(Throwable e) {
    if (e instanceof NotAuthorizedException) {
      return 401;
    }
    if (e instanceof ServiceUnavailableException) {
      return 503;
    }
    if (e instanceof NoSuchTableException
        || e instanceof NotFoundException
        || e instanceof NoSuchNamespaceException
        || e instanceof NoSuchViewException) {
      return 404;
    }
    if (e instanceof AlreadyExistsException
        || e instanceof CommitFailedException
        || e instanceof NamespaceNotEmptyException) {
      return 409;
    }
    if (e instanceof ValidationException
        || e instanceof IllegalArgumentException
        || e instanceof UnsupportedOperationException) {
      return 400;
    }
    return 500;
  }

  private <T> T read(byte[] body, Class<T> type) throws IOException {
    return json.readValue(body, type);
  }

  private static String query(HttpExchange exchange, String name) {
    String query = exchange.getRequestURI().getRawQuery();
    if (query == null) {
      return null;
    }
    for (String pair : query.split("&")) {
      String[] kv = pair.split("=", 2);
      if (kv[0].equals(name) && kv.length == 2) {
        return decode(kv[1]);
      }
    }
    return null;
  }

  private static String decode(String text) {
    return URLDecoder.decode(text, StandardCharsets.UTF_8);
  }

  private void reply(HttpExchange exchange, int code, Object body) throws IOException {
    byte[] bytes = body == null ? new byte[0] : json.writeValueAsBytes(body);
    exchange.getResponseHeaders().set("Content-Type", "application/json");
    boolean empty = bytes.length == 0 || exchange.getRequestMethod().equals("HEAD");
    exchange.sendResponseHeaders(code, empty ? -1 : bytes.length);
    if (!empty) {
      try (OutputStream out = exchange.getResponseBody()) {
        out.write(bytes);
      }
    }
    exchange.close();
  }
}
