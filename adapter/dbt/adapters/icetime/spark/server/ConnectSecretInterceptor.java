package icetime.server;

import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Paths;
import java.security.MessageDigest;
import org.sparkproject.connect.grpc.Metadata;
import org.sparkproject.connect.grpc.ServerCall;
import org.sparkproject.connect.grpc.ServerCallHandler;
import org.sparkproject.connect.grpc.ServerInterceptor;
import org.sparkproject.connect.grpc.Status;

/**
 * The warm server's check of a Spark Connect call on Spark 3.5, whose service checks none (4.x
 * has spark.connect.authenticate.token): the call's x-icetime-secret header is the secret in the
 * file named by ICETIME_SERVER_SECRET_FILE, as SecretAuthenticator checks a Thrift login. A header,
 * not the URL's token: PySpark 3.5's client opens TLS whenever a token is given, and the service
 * listens on loopback without TLS. Compiled against the shaded gRPC of spark-connect_2.12 3.5.
 */
public final class ConnectSecretInterceptor implements ServerInterceptor {
  static final Metadata.Key<String> SECRET =
      Metadata.Key.of("x-icetime-secret", Metadata.ASCII_STRING_MARSHALLER);

  @Override
  public <Q, R> ServerCall.Listener<Q> interceptCall(
      ServerCall<Q, R> call, Metadata headers, ServerCallHandler<Q, R> next) {
    String refusal = refusal(headers.get(SECRET));
    if (refusal == null) {
      return next.startCall(call, headers);
    }
    call.close(Status.UNAUTHENTICATED.withDescription(refusal), new Metadata());
    return new ServerCall.Listener<Q>() {};
  }

  private static String refusal(String given) {
    String path = System.getenv("ICETIME_SERVER_SECRET_FILE");
    if (path == null || given == null) {
      return "icetime server: a Spark Connect client must present the secret";
    }
    byte[] expected;
    try {
      expected = new String(Files.readAllBytes(Paths.get(path)), StandardCharsets.UTF_8)
          .trim().getBytes(StandardCharsets.UTF_8);
    } catch (java.io.IOException e) {
      return "icetime server: the secret file cannot be read";
    }
    if (!MessageDigest.isEqual(expected, given.getBytes(StandardCharsets.UTF_8))) {
      return "icetime server: wrong secret";
    }
    return null;
  }
}
